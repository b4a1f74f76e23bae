"""Runs judged again (lab.reporting.suite_rejudge, `lab tables suite|seen --rejudge`): the
verdict the lab gives a run folder now, from its own spec, history and events, beside the
one the run recorded; folders written by hand (a run of `random` on broker_ref), the real
judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lab.cli.main import main
from lab.reporting.suite_cells import collect, read_result
from lab.reporting.suite_rejudge import RECORDED_KEY, rejudged
from lab.targets.suite import SUITE_INDEX, append_index
from scenarios.catalog import scenario_named


def _run(folder: Path, received: int, recorded: dict[str, Any], target: str = "") -> Path:
    """A run of `random` (seed 7): 20 acknowledged sends, `received` of them drained."""
    folder.mkdir(parents=True)
    spec = scenario_named("random").spec(7).to_json()
    if target:
        spec["target"] = target
    (folder / "spec.json").write_text(json.dumps(spec))
    ops: list[dict[str, Any]] = []
    for i in range(1, 21):
        ops += [
            {"process": "p1", "type": "invoke", "f": "send", "value": f"p1-{i}", "seq": i},
            {"process": "p1", "type": "ok", "f": "send", "value": f"p1-{i}", "node": "n1"},
        ]
    ops.append({"process": "c1", "type": "invoke", "f": "drain", "value": None})
    ops += [
        {"process": "c1", "type": "ok", "f": "receive", "value": f"p1-{i}", "node": "n1"}
        for i in range(1, received + 1)
    ]
    ops.append({"process": "c1", "type": "ok", "f": "drain", "value": None})
    lines = (json.dumps({"index": i, "time": i + 1, **op}) for i, op in enumerate(ops))
    (folder / "history.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "events.jsonl").write_text("")
    (folder / "result.json").write_text(json.dumps({"scenario": "random", **recorded}))
    return folder


def _said() -> tuple[list[str], Any]:
    lines: list[str] = []
    return lines, lines.append


def test_a_run_is_judged_again_and_says_what_it_recorded_when_that_differs(
    tmp_path: Path,
) -> None:
    lines, say = _said()
    recorded = {"verdict": "broken", "violations": ["role-reached"], "reproduce": "lab run x"}
    whole = _run(tmp_path / "whole", 20, recorded)
    again = rejudged(whole, read_result(whole), say)
    assert again is not None and again["verdict"] == "held" and again["reproduce"] == "lab run x"
    assert again[RECORDED_KEY] == "broken"
    lossy = _run(tmp_path / "lossy", 18, {"verdict": "broken", "violations": ["lost"]})
    same = rejudged(lossy, read_result(lossy), say)
    assert same is not None and same["verdict"] == "broken" and "lost" in same["violations"]
    assert same["check"]["lost"]["count"] == 2 and RECORDED_KEY not in same
    assert json.loads((whole / "result.json").read_text())["verdict"] == "broken"  # untouched
    assert lines == []


def test_a_run_that_cannot_be_judged_again_keeps_its_recorded_verdict(tmp_path: Path) -> None:
    lines, say = _said()
    stopped = {"verdict": "interrupted", "interrupted": {"signal": "SIGINT"}}
    interrupted = _run(tmp_path / "i", 20, stopped)
    assert rejudged(interrupted, read_result(interrupted), say) == {"scenario": "random", **stopped}
    foreign = _run(tmp_path / "f", 20, {"verdict": "broken"}, target="no-such-target")
    assert rejudged(foreign, read_result(foreign), say) == {
        "scenario": "random",
        "verdict": "broken",
    }
    assert len(lines) == 1 and "not judged again" in lines[0] and "no-such-target" in lines[0]
    assert rejudged(tmp_path / "none", None, say) is None


def test_lab_tables_suite_rejudge_shows_the_verdicts_of_this_lab(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = tmp_path / "session"
    run = _run(session / "t0" / "random" / "20261126T100000Z-7", 20, {"verdict": "broken"})
    entry = {"test": "t0", "scenario": "random", "folder": str(run), "seed": 7}
    append_index(session / SUITE_INDEX, {"target": "broker_ref", "backend": "process", **entry})
    assert [c.verdict for c in collect([session])] == ["broken"]
    page = tmp_path / "page.md"
    assert main(["tables", "suite", str(session), "--out", str(page)]) == 0
    assert "[re-judged" not in page.read_text()
    assert main(["tables", "suite", str(session), "--out", str(page), "--rejudge"]) == 0
    text = page.read_text()
    assert "seed 7: held (lost 0) [re-judged; the run recorded broken]" in text
    assert "Every run was judged again by the lab that made this page" in text
    assert f"--out {page} --rejudge` on" in text
    assert "| `random` | broker_ref, local processes | 1 (seed 7) | 1/1" in text
    capsys.readouterr()
    assert main(["tables", "seen", str(session), "--rejudge"]) == 0
    assert "0 declared deviations counted in 1 sessions" in capsys.readouterr().out
