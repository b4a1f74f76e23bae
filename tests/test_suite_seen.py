"""`lab tables seen` (lab.reporting.suite_seen): the `seen` entry each declared deviation
gets from suite sessions, counted over its scenario's runs on a backend; and the target
settings a run was given (its spec.json), which decide the declarations that apply to it
in the rates tables as in the judge. Synthesized session folders, the real Artemis
declarations."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from lab.cli.main import main
from lab.reporting.suite_cells import chosen_settings, collect
from lab.reporting.suite_declared import declared_deviations
from lab.reporting.suite_seen import seen_entries
from lab.reporting.suite_table import rates_table, table
from lab.targets.suite import SUITE_INDEX, append_index, run_settings
from scenarios.catalog import scenario_named

FROZEN = "C8-a-frozen-primary-keeps-the-file-lock"
RESUMED = "C8-a-resumed-primary-serves-until-it-finds-its-lock-lost"


def _session(
    folder: Path, verdicts: list[str], settings: dict[str, str] | None = None, first: int = 7
) -> None:
    """A session of Artemis's hung-primary on local JVMs, a run per seed from `first`, each
    reproducing the file-lock declaration when its verdict is `deviation`."""
    for seed, verdict in enumerate(verdicts, start=first):
        run = folder / f"t-{seed}" / "hung-primary" / f"20261126T080000Z-{seed}"
        run.mkdir(parents=True)
        result: dict[str, Any] = {
            "scenario": "hung-primary", "seed": seed, "verdict": verdict,
            "mode": "active-passive", "target": "artemis", "target_version": "2.40.0",
            "metrics": {"unavailable_longest_s": 6.0},
        }  # fmt: skip
        if verdict == "deviation":
            result["deviation"] = {"outcome": "reproduced", "id": FROZEN}
        (run / "result.json").write_text(json.dumps(result))
        context = {"artemis": settings} if settings else {}
        (run / "spec.json").write_text(json.dumps({"group": {"target_context": context}}))
        append_index(
            folder / SUITE_INDEX,
            {"test": f"t[{seed}]", "scenario": "hung-primary", "target": "artemis",
             "target_version": "2.40.0", "backend": "process", "seed": seed,
             "mode": "active-passive", "folder": str(run)},
        )  # fmt: skip


def test_a_runs_settings_decide_which_declarations_apply() -> None:
    by_default = {d.id for d in declared_deviations("artemis", "hung-primary", "process", "")}
    assert FROZEN in by_default and RESUMED not in by_default  # the file lock is the default
    zk = {"lock-manager": "zookeeper"}
    with_zk = {d.id for d in declared_deviations("artemis", "hung-primary", "ssh", "", zk)}
    assert RESUMED in with_zk and FROZEN not in with_zk


def test_a_run_folder_gives_the_settings_its_spec_names(tmp_path: Path) -> None:
    _session(tmp_path, ["held"], {"lock-manager": "zookeeper", "zookeeper": "lab"})
    (run,) = tmp_path.glob("t-7/hung-primary/*")
    assert run_settings(run, "artemis") == (("lock-manager", "zookeeper"), ("zookeeper", "lab"))
    assert run_settings(run, "qpid-broker-j") == ()
    assert run_settings(tmp_path, "artemis") == ()  # no spec.json: none


def test_each_declaration_is_counted_over_its_scenarios_runs(tmp_path: Path) -> None:
    _session(tmp_path, ["deviation", "held", "deviation", "deviation", "broken"])
    (entry,) = seen_entries(collect([tmp_path]), declared_deviations, dt.date(2026, 11, 26))
    assert (entry.deviation, entry.scenario, entry.backend) == (FROZEN, "hung-primary", "process")
    assert (entry.times, entry.runs) == (3, 5)
    assert entry.toml("load 7") == (
        '{ backend = "process", rate = "3/5", date = 2026-11-26, note = "seeds 7-11; load 7" }'
    )


def test_the_rates_table_compares_a_settings_declaration_with_its_seen_rate(
    tmp_path: Path,
) -> None:
    # The file-lock declaration is seen 4 of 4 before (its `seen`); 0 of 5 now is flagged,
    # which only happens when the table knows it applies to these runs' settings.
    _session(tmp_path, ["held"] * 5)
    lines, _ = rates_table(collect([tmp_path]), declared_deviations, None)
    (row,) = [line for line in lines if line.startswith("| `hung-primary`")]
    assert FROZEN in row and "fixed upstream?" in row


def test_sessions_with_other_target_settings_are_rows_and_columns_of_their_own(
    tmp_path: Path,
) -> None:
    _session(tmp_path / "lock", ["deviation"] * 5)
    _session(tmp_path / "quorum", ["held", "broken"], {"activation": "quorum-voting"}, first=7)
    refused = {"test": "t9", "scenario": "replicate-none", "target_version": "2.40.0",
               "refused": "no per-queue replication"}  # fmt: skip
    append_index(
        tmp_path / "quorum" / SUITE_INDEX, {"target": "artemis", "backend": "process", **refused}
    )
    cells = collect([tmp_path / "lock", tmp_path / "quorum"])
    lines, tallies = rates_table(cells, declared_deviations, None)
    rows = [line for line in lines if line.startswith("| `hung-primary`")]
    assert [row.split(" | ")[1:3] for row in rows] == [
        ["Artemis 2.40.0, local processes", "5 (seeds 7–11)"],
        ["Artemis 2.40.0, local processes, activation=quorum-voting", "2 (seeds 7, 8)"],
    ]
    assert sorted(t.runs for t in tallies) == [2, 5]
    every = table(cells)
    assert every[0] == (  # a refusal (it has no settings) makes no column of its own
        "| scenario | Artemis 2.40.0, local processes "
        "| Artemis 2.40.0, local processes, activation=quorum-voting |"
    )
    (row,) = [line for line in every if line.startswith("| `replicate-none`")]
    assert row.count("refused: no per-queue replication") == 2


def test_lab_tables_seen_prints_the_entries_to_add(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _session(tmp_path / "a", ["deviation"] * 4 + ["held"])
    _session(tmp_path / "zk", ["held"] * 2, {"lock-manager": "zookeeper"}, first=20)
    assert main(["tables", "seen", str(tmp_path / "a"), "--note", 'load "7"']) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"# {FROZEN} (artemis@2.40.0, hung-primary on process): reproduced in 4 of 5 runs"
    )
    assert out[1] == (
        '    { backend = "process", rate = "4/5", date = 2026-11-26, '
        'note = "seeds 7-11; load \\"7\\"" },'
    )
    assert out[-1].startswith("1 declared deviations counted in 1 sessions")
    assert main(["tables", "seen", str(tmp_path / "zk")]) == 0
    said = capsys.readouterr().out
    where = "artemis@2.40.0, hung-primary on process, lock-manager=zookeeper"
    assert f"# {RESUMED} ({where}): reproduced in 0 of 2" in said
    assert 'note = "lock-manager=zookeeper; seeds 20, 21" }' in said  # the settings said
    assert FROZEN not in said


def test_lab_tables_seen_refuses_what_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tables", "seen", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip() == f"lab: error: {tmp_path / 'none'}: no such folder"
    _session(tmp_path / "a", ["held"])
    assert main(["tables", "seen", str(tmp_path / "a"), "--target", "qpid-broker-j"]) == 2
    assert "--target qpid-broker-j: no runs of it" in capsys.readouterr().err


def test_a_scenarios_own_target_settings_are_not_the_sessions_choice(tmp_path: Path) -> None:
    # split-brain sets Broker-J's election timeouts itself; a session adds its own choice.
    spec = scenario_named("split-brain").spec(7).to_json()
    own = spec["group"]["target_context"]["qpid-broker-j"]
    assert own["je.rep.electionsPrimaryRetries"] == "0"
    spec["group"]["target_context"]["qpid-broker-j"] = {**own, "chosen": "yes"}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    given = run_settings(tmp_path, "qpid-broker-j")
    assert len(given) == len(own) + 1
    assert chosen_settings(tmp_path, "qpid-broker-j", given) == (("chosen", "yes"),)
    (tmp_path / "spec.json").write_text(json.dumps({"scenario": "mine", "group": {}}))
    assert chosen_settings(tmp_path, "x", (("a", "b"),)) == (("a", "b"),)  # not the lab's
