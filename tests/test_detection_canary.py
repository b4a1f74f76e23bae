"""Reached, triggered, detected without a campaign: fake canary logs read into minutes from the
campaign's start, a miss named by the stage that failed, a cell's stages as the table says
them; the faults a trial's runs applied counted from their schedule.jsonl."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from detection_helpers import BEGAN, cell_trials, trial

from lab.bench.detection_canary import (
    MISSES,
    CanaryTimes,
    misses,
    read_canary_log,
    stages,
    why_missed,
)
from lab.bench.detection_results import cell_of_campaign, faults_applied

T0 = BEGAN.timestamp()


def _log(path: Path, *entries: tuple[str, float, str]) -> Path:
    lines = [
        json.dumps({"what": what, "t": T0 + seconds, "pid": 100 + i, "detail": detail})
        for i, (what, seconds, detail) in enumerate(entries)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_first_line_of_each_kind_over_every_process_counts(tmp_path: Path) -> None:
    log = _log(
        tmp_path / "canary.jsonl",
        ("reached", 90.0, "node n2"),  # a later process, written first
        ("reached", 30.0, "node n1"),
        ("triggered", 246.0, "vote granted to a staler log: 7 < 9"),
        ("triggered", 300.0, "again, in another node"),
    )
    seen = read_canary_log(log, BEGAN)
    assert seen == CanaryTimes(0.5, 4.1, "node n1", "vote granted to a staler log: 7 < 9")


def test_a_log_never_written_or_cut_short_says_what_it_can(tmp_path: Path) -> None:
    assert read_canary_log(tmp_path / "none.jsonl", BEGAN) == CanaryTimes()
    log = _log(tmp_path / "cut.jsonl", ("reached", 12.0, "x"))
    with log.open("a", encoding="utf-8") as out:
        out.write('{"what": "triggered", "t": 17')  # a process killed as it wrote
        out.write("\nnot json\n")
        out.write(json.dumps({"what": "reached", "pid": 1}) + "\n")  # no time
        out.write(json.dumps({"what": "other", "t": T0}) + "\n")
    seen = read_canary_log(log, BEGAN)
    assert (seen.reached, seen.triggered) == (0.2, None)
    early = _log(tmp_path / "early.jsonl", ("reached", -5.0, "a clock a little behind"))
    assert read_canary_log(early, BEGAN).reached == 0.0


def test_a_miss_says_which_stage_failed() -> None:
    assert why_missed(trial("b", "random", 1, 2.0, canary=True)) is None
    failed = trial("b", "random", 1, None, canary=True, error="lab: error: x")
    assert why_missed(failed) == "failed to run"
    assert why_missed(trial("b", "random", 1, None)) == "no canary"
    assert why_missed(trial("b", "random", 1, None, canary=True)) == "never reached"
    reached = trial("b", "random", 1, None, canary=True, reached=0.3)
    assert why_missed(reached) == "reached, never triggered"
    triggered = trial("b", "random", 1, None, canary=True, reached=0.3, triggered=4.0)
    assert why_missed(triggered) == "triggered, not detected"
    only_triggered = trial("b", "random", 1, None, canary=True, triggered=4.0)
    assert why_missed(only_triggered) == "triggered, not detected"
    assert set(MISSES) == {
        "failed to run",
        "no canary",
        "never reached",
        "reached, never triggered",
        "triggered, not detected",
    }


def test_a_cells_stages_and_misses_read_as_the_issue_asks() -> None:
    cells = [
        trial("b", "random", 1, None, canary=True, reached=0.1, triggered=4.1),
        trial("b", "random", 2, None, canary=True, reached=0.2),
        trial("b", "random", 3, None, canary=True, reached=0.4),
    ]
    assert stages(cells) == "reached 3/3 (0.2 min), triggered 1/3 (4.1 min), detected 0/3"
    assert misses(cells) == "2 reached, never triggered; 1 triggered, not detected"
    plain = cell_trials("a", "random", [1.0, None, 3.0])
    assert stages(plain) == "no canary, detected 2/3 (2.0 min)"
    assert misses(plain) == "1 no canary"
    found_silently = cell_trials("a", "random", [1.0], canary=True, reached=0.5)
    assert misses(found_silently) == "1 detected, canary never triggered"
    with_error = [*cells[:1], trial("b", "random", 2, None, canary=True, error="x")]
    assert stages(with_error).startswith("reached 1/1 (0.1 min), triggered 1/1")
    assert misses(with_error) == "1 triggered, not detected; 1 failed to run"


def _run_folder(campaign: Path, name: str, applied: list[tuple[str, bool]]) -> str:
    folder = campaign / "runs" / name
    folder.mkdir(parents=True)
    lines = [{"phase": "planned", "id": "f1", "action": "start", "fault": "kill"}]
    for number, (action, ok) in enumerate(applied, start=1):
        lines.append({"phase": "applied", "id": f"f{number}", "action": action, "ok": ok})
    text = "\n".join(json.dumps(line) for line in lines) + "\n"
    (folder / "schedule.jsonl").write_text(text, encoding="utf-8")
    return f"runs/{name}"


def test_a_trial_counts_the_faults_its_runs_applied_and_their_time(tmp_path: Path) -> None:
    held = _run_folder(tmp_path, "r1", [("start", True), ("stop", True), ("start", False)])
    broken = _run_folder(tmp_path, "r2", [("start", True), ("start", True), ("stop", True)])
    after = _run_folder(tmp_path, "r3", [("start", True)])
    assert faults_applied(tmp_path / held) == 1 and faults_applied(tmp_path / "gone") == 0
    campaign = {
        "runs": [
            {"number": 1, "kind": "fresh", "verdict": "held", "seconds": 20.0, "seed": 1,
             "started": "2026-11-26T08:00:03.000000Z", "folder": held},
            {"number": 2, "kind": "fresh", "verdict": "broken", "seconds": 22.0, "seed": 2,
             "started": "2026-11-26T08:00:24.000000Z", "folder": broken,
             "violations": ["lost"]},
            {"number": 3, "kind": "fresh", "verdict": "held", "seconds": 20.0, "seed": 3,
             "started": "2026-11-26T08:00:47.000000Z", "folder": after},
        ]
    }  # fmt: skip
    cell = cell_of_campaign(
        campaign,
        BEGAN,
        bug="b",
        design="replicated-group",
        generator="random",
        trial=1,
        seed=7,
        campaign_dir=tmp_path,
    )
    assert (cell.found, cell.runs, cell.minutes) == (True, 2, 0.77)
    assert (cell.faults, cell.run_s, cell.first_run_s, cell.gaps_s) == (3, 42.0, 3.0, 1.0)
    assert replace(cell, campaign_s=50.0).end_s == 4.0  # 50 s less 3 + 42 + 1
    quiet = cell_of_campaign(
        {"runs": campaign["runs"][:1]},
        BEGAN,
        bug="b",
        design="replicated-group",
        generator="random",
        trial=1,
        seed=7,
    )
    assert (quiet.found, quiet.faults, quiet.run_s) == (False, 0, 20.0)  # no folder given
