"""Verdicts as rates (lab.reporting.suite_rates, `lab tables suite`): a scenario's runs over
seeds counted with Wilson intervals, the service gap's median and maximum, and the flags
for what changed, against a declaration's `seen` rate (lab.judge.seen_rates) and against
the rates a page published before; all from synthesized result.json files."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from lab.cli.main import main
from lab.judge.deviations import Condition, Deviation, Matcher, parse_declarations
from lab.judge.seen_rates import SeenRate, latest_seen, parse_seen
from lab.reporting.suite_cells import collect
from lab.reporting.suite_rates import Baseline, Rate, RunRecord, Tally, flags, summary, tally
from lab.reporting.suite_table import page, rates_table
from lab.targets.suite import SUITE_INDEX, append_index

pytest_plugins = ("pytester",)

DAY = dt.date(2026, 11, 26)


def _deviation(id_: str, *seen: SeenRate) -> Deviation:
    match = Matcher(violations=("unavailable>bound",), check=(("lost", Condition.parse("0")),))
    return Deviation(id_, "replica-failure", "p", "o", "e", "lab run …", match, seen=seen)


def _tally(held: int = 0, deviation: int = 0, broken: int = 0, unknown: int = 0) -> Tally:
    records = [
        *(RunRecord("replica-failure", "qpid-broker-j", "process", i, "held") for i in range(held)),
        *(
            RunRecord("replica-failure", "qpid-broker-j", "process", 10 + i, "deviation", "J3")
            for i in range(deviation)
        ),
        *(RunRecord("replica-failure", "qpid-broker-j", "process", 20 + i, "broken")
          for i in range(broken)),
        *(RunRecord("replica-failure", "qpid-broker-j", "process", 30 + i, "unknown")
          for i in range(unknown)),
    ]  # fmt: skip
    (found,) = tally(records)
    return found


@pytest.mark.parametrize(
    ("count", "runs", "shown"),
    [(5, 5, "5/5 (57–100 %)"), (0, 5, "0/5 (0–43 %)"), (1, 5, "1/5 (4–62 %)"),
     (3, 5, "3/5 (23–88 %)"), (20, 20, "20/20 (84–100 %)"), (0, 0, "0/0")],
)  # fmt: skip
def test_a_rate_shows_its_wilson_interval(count: int, runs: int, shown: str) -> None:
    assert str(Rate(count, runs)) == shown


def test_two_rates_differ_only_when_their_intervals_do_not_overlap() -> None:
    assert Rate(5, 5).differs_from(Rate(0, 5)) and Rate(0, 5).differs_from(Rate(5, 5))
    assert not Rate(5, 5).differs_from(Rate(1, 5))  # five runs tell little
    assert Rate(20, 20).differs_from(Rate(10, 20))
    assert not Rate(3, 5).differs_from(Rate(3, 5))
    assert not Rate(0, 0).differs_from(Rate(5, 5))


def test_a_tally_counts_each_outcome_and_the_gaps() -> None:
    records = [
        RunRecord("s", "t", "process", 1, "held", gap_s=5.0),
        RunRecord("s", "t", "process", 2, "deviation", "J3-a", 7.0),
        RunRecord("s", "t", "process", 3, "deviation", "J3-b", 6.0),
        RunRecord("s", "t", "process", 4, "broken", gap_s=30.0),
        RunRecord("s", "t", "docker", 1, "unknown"),
    ]
    first, second = tally(records)
    assert (first.runs, first.seeds, first.gaps_s) == (4, (1, 2, 3, 4), (5.0, 7.0, 6.0, 30.0))
    assert [first.rate(o).count for o in ("held", "deviation", "broken", "unknown")] == [1, 2, 1, 0]
    assert dict(first.deviations) == {"J3-a": 1, "J3-b": 1}
    assert (first.gap_median_s, first.gap_max_s) == (6.5, 30.0)
    assert (second.backend, second.runs, second.gap_median_s) == ("docker", 1, None)
    assert Tally.from_json(json.loads(json.dumps(first.to_json()))) == first


def test_a_declared_deviation_no_longer_seen_is_flagged_fixed_upstream() -> None:
    always = _deviation("J3", SeenRate("process", 5, 5, DAY))
    assert flags(_tally(held=5), [always], None) == [
        "`J3` seen 5/5 (2026-11-26), 0/5 now: fixed upstream?"
    ]
    assert flags(_tally(deviation=5), [always], None) == []
    assert flags(_tally(held=4, deviation=1), [always], None) == []  # 1/5 against 5/5: overlap
    seldom = _deviation("J3", SeenRate("process", 1, 5, DAY))
    assert flags(_tally(held=5), [seldom], None) == []  # 0/5 against 1/5 says nothing
    assert flags(_tally(deviation=5), [_deviation("J3", SeenRate("process", 0, 5, DAY))], None) == [
        "`J3` seen 0/5 (2026-11-26), 5/5 now: its rate changed"
    ]
    elsewhere = _deviation("J3", SeenRate("docker", 5, 5, DAY))  # no rate for this backend
    assert flags(_tally(held=5), [elsewhere], None) == [
        "`J3` (declared, no rate given) not seen in 5 runs: fixed upstream?"
    ]


def test_a_held_verdict_that_breaks_is_flagged_and_rates_are_compared_with_before() -> None:
    before = Baseline(dt.datetime(2026, 11, 20, tzinfo=dt.UTC), (_tally(held=5),))
    assert flags(_tally(held=4, broken=1), [], before) == [
        "held 5/5 (2026-11-20), broken in 1/5 now"
    ]
    assert flags(_tally(held=5), [], before) == []
    assert flags(_tally(held=2, unknown=3), [], before) == []  # overlapping: no change shown
    assert flags(_tally(unknown=5), [], before) == [
        "held 5/5 (2026-11-20), 0/5 now: its rate changed"
    ]
    flaky = Baseline(None, (_tally(held=4, broken=1),))
    assert flags(_tally(held=4, broken=1), [], flaky) == []  # broken before too: no change
    assert flags(_tally(held=3, broken=2), [], None) == [
        "broken in 2/5, no earlier rate to compare"
    ]


def test_the_seen_field_is_checked_entry_by_entry() -> None:
    seen = parse_seen(
        [
            {"backend": "process", "rate": "3/5", "date": DAY, "note": "seeds 1-5"},
            {"backend": "process", "rate": " 5 / 5 ", "date": "2026-11-27"},
            {"backend": "docker", "rate": "0/5", "date": dt.datetime(2026, 11, 25, 9, 0)},
        ],
        "deviation 1",
    )
    assert str(latest_seen(seen, "process")) == "5/5 (2026-11-27)"
    assert latest_seen(seen, "docker") == SeenRate("docker", 0, 5, dt.date(2026, 11, 25))
    assert latest_seen(seen, "ssh") is None
    for bad, says in [
        ({"backend": "process", "rate": "3 of 5", "date": DAY}, "is not K/N"),
        ({"backend": "process", "rate": "6/5", "date": DAY}, "cannot be"),
        ({"backend": "process", "rate": "0/0", "date": DAY}, "cannot be"),
        ({"backend": "moon", "rate": "1/5", "date": DAY}, "backend: 'moon'"),
        ({"backend": "process", "rate": "1/5", "date": "soon"}, "not a date"),
        ({"backend": "process", "rate": "1/5"}, "'date' is required"),
        ({"backend": "process", "rate": "1/5", "date": DAY, "when": 1}, "unknown key 'when'"),
    ]:
        with pytest.raises(ValueError, match=says):
            parse_seen([bad], "deviation 1")
    raw = {
        "target": "t",
        "deviation": [{
            "id": "x", "scenario": "s", "predicted": "p", "observed": "o", "evidence": "e",
            "command": "c", "match": {}, "seen": [{"backend": "docker", "rate": "2/5",
                                                    "date": "2026-11-26"}],
        }],
    }  # fmt: skip
    (parsed,) = parse_declarations(raw, "f.toml").deviations
    assert parsed.seen == (SeenRate("docker", 2, 5, DAY),)
    raw["deviation"][0]["seen"] = {"backend": "docker"}
    with pytest.raises(ValueError, match=r"deviation 1\.seen must be a list"):
        parse_declarations(raw, "f.toml")


# ---- sessions of synthesized runs, through `lab tables suite` ------------------------------


def _session(folder: Path, outcomes: dict[str, list[tuple[str, float]]], stamp: str) -> None:
    """A session as the plugin leaves it: each scenario's runs (verdict, longest gap), one
    per seed from 1, on Broker-J and local processes; and one refusal."""
    for scenario, runs in outcomes.items():
        for seed, (verdict, gap) in enumerate(runs, start=1):
            run = folder / f"t-{scenario}-{seed}" / scenario / f"{stamp}-{seed}"
            run.mkdir(parents=True)
            result: dict[str, Any] = {
                "scenario": scenario, "seed": seed, "verdict": verdict, "mode": "",
                "check": {"lost": {"count": 0}}, "metrics": {"unavailable_longest_s": gap},
            }  # fmt: skip
            if verdict == "deviation":
                result["deviation"] = {
                    "outcome": "reproduced",
                    "id": "J3-designated-primary-stalls",
                }
            (run / "result.json").write_text(json.dumps(result))
            entry = {"test": f"t[{seed}]", "scenario": scenario, "seed": seed, "folder": str(run)}
            append_index(folder / SUITE_INDEX, {"target": "qpid-broker-j", "backend": "process",
                                                "mode": "", **entry})  # fmt: skip
    refused = {"test": "t", "scenario": "primary-failure", "seed": 1, "refused": "no such mode"}
    append_index(folder / SUITE_INDEX, {"target": "qpid-broker-j", "backend": "process", **refused})


FIRST = {
    "master-failure": [("held", 4.0), ("held", 5.0), ("held", 6.0), ("held", 4.5), ("held", 9.0)],
    "replica-failure": [("deviation", 5.1)] * 5,
}
LATER = {
    "master-failure": [("held", 4.0), ("broken", 19.2), ("held", 6.0), ("held", 4.5), ("held", 5)],
    "replica-failure": [("held", 0.4)] * 5,
}


def test_the_rates_table_counts_each_scenario_over_its_seeds(tmp_path: Path) -> None:
    _session(tmp_path / "a", FIRST, "20261126T080000Z")
    cells = collect([tmp_path / "a"])
    lines, tallies = rates_table(cells, lambda *_: [], None)
    assert lines[0].startswith("| scenario | target, backend | runs | held | deviation |")
    assert lines[2] == (
        "| `master-failure` | Broker-J, local processes | 5 (seeds 1–5) | 5/5 (57–100 %) "
        "| 0/5 (0–43 %) | 0/5 (0–43 %) | 0 | 5.0 / 9.0 s | — |"
    )
    assert lines[3].startswith(
        "| `replica-failure` | Broker-J, local processes | 5 (seeds 1–5) | 0/5 (0–43 %) "
        "| 5/5 (57–100 %): `J3-designated-primary-stalls` 5 | 0/5 (0–43 %) | 0 | 5.1 / 5.1 s"
    )
    assert lines[4:] == [
        "",
        "Refused before anything started, with the reason `lab run` gives:",
        "",
        "- Broker-J, local processes: `primary-failure` — no such mode",
    ]
    assert len(tallies) == 2


def test_lab_tables_suite_compares_a_new_session_with_the_rates_it_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _session(tmp_path / "a", FIRST, "20261126T080000Z")
    _session(tmp_path / "b", LATER, "20261127T080000Z")
    out = tmp_path / "suite.md"
    assert main(["tables", "suite", "a", "--out", str(out)]) == 0
    first = out.read_text()
    assert "## Rates over seeds\n" in first and "## Every run\n" in first
    assert "seed 2: held (lost 0, longest gap 5.0 s)" in first
    published = json.loads(out.with_suffix(".json").read_text())
    assert published["sessions"] == ["a"] and "before" not in published
    assert {t["scenario"]: t["held"] for t in published["tallies"]} == {
        "master-failure": 5, "replica-failure": 0,
    }  # fmt: skip

    assert main(["tables", "suite", "b", "--out", str(out)]) == 0
    later = out.read_text()
    made = dt.datetime.fromisoformat(published["made"]).date().isoformat()
    assert f"## Rates over seeds, compared with the rates of {made}\n" in later
    assert f"**held 5/5 ({made}), broken in 1/5 now**" in later
    assert f"**deviation 5/5 ({made}), 0/5 now: its rate changed**" in later
    assert main(["tables", "suite", "b", "--out", str(out)]) == 0  # the same sessions again
    assert f"**held 5/5 ({made}), broken in 1/5 now**" in out.read_text()

    capsys.readouterr()
    assert main(["tables", "suite", "b", "--out", str(out), "--baseline", "none.json"]) == 2
    assert capsys.readouterr().err.strip() == "lab: error: --baseline none.json: no such file"
    (tmp_path / "bad.json").write_text("[1, 2]")
    assert main(["tables", "suite", "b", "--out", str(out), "--baseline", "bad.json"]) == 2
    assert "bad.json: not a rates file of `lab tables suite`" in capsys.readouterr().err


def test_a_page_compares_with_the_declarations_of_its_target(tmp_path: Path) -> None:
    _session(tmp_path / "b", LATER, "20261127T080000Z")
    declared = _deviation("J3-designated-primary-stalls", SeenRate("process", 5, 5, DAY))
    text = page(
        [tmp_path / "b"], collect([tmp_path / "b"]), "lab tables suite b --out x.md",
        dt.datetime(2026, 11, 27, 9, 0, tzinfo=dt.UTC),
        lambda target, scenario, backend, mode, given: (
            [declared] if scenario == "replica-failure" else []
        ),
    )  # fmt: skip
    assert (
        "**`J3-designated-primary-stalls` seen 5/5 (2026-11-26), 0/5 now: fixed upstream?**" in text
    )
    assert "**broken in 1/5, no earlier rate to compare**" in text


def test_a_sessions_rates_are_summed_up_per_scenario() -> None:
    records = [
        RunRecord("master-failure", "qpid-broker-j", "process", s, v, gap_s=g)
        for s, (v, g) in enumerate([("held", 4.0), ("held", 6.0), ("broken", 19.2)], start=1)
    ]
    records.append(RunRecord("quorum-loss", "qpid-broker-j", "process", 1, "held"))  # one run
    declared = _deviation("J3", SeenRate("process", 5, 5, DAY))
    lines = summary(records, lambda *_: [declared])
    assert lines == [
        "master-failure (qpid-broker-j, process): held 2/3 (21–94 %), deviation 0/3 (0–56 %), "
        "broken 1/3 (6–79 %), unknown 0; gap median 6.0 s, max 19.2 s",
        "  changed: `J3` seen 5/5 (2026-11-26), 0/3 now: fixed upstream?",
        "  changed: broken in 1/3, no earlier rate to compare",
    ]


def test_a_pytest_session_over_seeds_ends_with_its_rates(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "import json\n"
        "def test_it(request, lab_seed):\n"
        "    run = {'scenario': 'master-failure', 'target': 'broker_ref', 'backend': 'process',\n"
        "           'mode': '', 'seed': lab_seed, 'deviation': None, 'gap_s': 1.0 * lab_seed,\n"
        "           'verdict': 'held' if lab_seed < 3 else 'broken'}\n"
        "    request.node.user_properties.append(('lab_run', json.dumps(run)))\n"
    )
    result = pytester.runpytest("--lab-seeds", "1,2,3")
    result.stdout.fnmatch_lines(
        [
            "*lab: rates over seeds*",
            "master-failure (broker_ref, process): held 2/3 (21–94 %), deviation 0/3 (0–56 %), "
            "broken 1/3 (6–79 %), unknown 0; gap median 2.0 s, max 3.0 s",
            "  changed: broken in 1/3, no earlier rate to compare",
        ]
    )
    assert "rates over seeds" not in pytester.runpytest("--lab-seeds", "1").stdout.str()
