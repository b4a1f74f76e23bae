"""`lab shrink`: fault windows and the smaller schedules tried; delta debugging against a
rule written here (fast), and against real runs that lose acknowledged messages."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_lab

from lab.campaign.shrink import Rerun, shrink_run
from lab.campaign.windows import (
    Window,
    apart,
    halved,
    resolved_targets,
    schedule_of,
    windows_of,
    with_roles_resolved,
)
from lab.ground.errors import UsageError
from lab.ground.faultops import FaultOp
from lab.ground.invocation import shown_command
from lab.ground.spec import RunSpec
from scenarios.base import fault_window
from scenarios.catalog import scenario_named

ROOT = Path(__file__).resolve().parent.parent


def _window(fault_id: str, start: float, end: float | None, target: str = "n1") -> Window:
    return Window(fault_id, "pause", target, start, end)


def test_windows_round_trip_and_never_healed_faults() -> None:
    ops = (
        *fault_window("kill", "@master", 2.0, 1.5, "f1"),
        FaultOp(4.0, "start", "transfer_master", "@replica:1", "f2"),
        *fault_window("latency", "n1_to_n2", 1.0, 5.0, "f3", latency_ms=100),
    )
    windows = windows_of(ops)
    assert [w.id for w in windows] == ["f3", "f1", "f2"]
    assert windows[2].end_s is None and windows[0].params == {"latency_ms": 100}

    def shown(seq: tuple[FaultOp, ...]) -> list[str]:
        return sorted(json.dumps(op.to_json(), sort_keys=True) for op in seq)

    assert shown(schedule_of(windows)) == shown(ops)


def test_halving_and_moving_apart() -> None:
    assert halved(_window("a", 2.0, 4.0)) == _window("a", 2.0, 3.0)
    assert halved(_window("a", 2.0, 2.3)) is None
    assert halved(_window("a", 2.0, None)) is None
    windows = [_window("a", 1.0, 3.0), _window("b", 2.0, 4.0), _window("c", 6.0, 7.0)]
    moved = apart(windows, 1)
    assert moved is not None and moved[1] == _window("b", 3.5, 5.5)
    assert apart(windows, 2) is None  # overlaps nothing


def test_roles_resolved_from_the_runs_applied_schedule(tmp_path: Path) -> None:
    lines = [
        {"phase": "planned", "id": "f1", "action": "start", "target": "@master"},
        {
            "phase": "applied",
            "id": "f1",
            "action": "start",
            "target": "n2",
            "ok": True,
            "planned_target": "@master",
        },
        {"phase": "applied", "id": "f2", "action": "start", "target": "n3", "ok": True},
        {
            "phase": "applied",
            "id": "f3",
            "action": "start",
            "target": "n1",
            "ok": False,
            "planned_target": "@replica",
        },
    ]
    (tmp_path / "schedule.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + "{")
    resolved = resolved_targets(tmp_path)
    assert resolved == {"f1": "n2"}
    windows = [_window("f1", 1.0, 2.0, "@master"), _window("f2", 3.0, 4.0, "n3")]
    assert [w.target for w in with_roles_resolved(windows, resolved)] == ["n2", "n3"]


def _failed_run(tmp_path: Path, spec: RunSpec, kinds: tuple[str, ...] = ("lost",)) -> Path:
    folder = tmp_path / "runs" / spec.scenario / "20260101T000000Z-1"
    folder.mkdir(parents=True)
    (folder / "spec.json").write_text(json.dumps(spec.to_json()))
    verdict = "broken" if kinds else "held"
    result = {"v": 2, "verdict": verdict, "violations": list(kinds)}
    (folder / "result.json").write_text(json.dumps(result))
    return folder


def _spec_with(windows: list[Window], load_s: float = 20.0) -> RunSpec:
    base = scenario_named("random").spec(1)
    return replace(
        base,
        schedule=schedule_of(windows),
        workload=replace(base.workload, duration_s=load_s),
    )


def test_ddmin_keeps_exactly_the_windows_the_violation_needs(tmp_path: Path) -> None:
    """The rule: acknowledged messages are lost when f2 and f4 both happen and f2 lasts
    at least 1 s — whatever else the schedule holds."""
    windows = [
        _window(f"f{i}", 1.0 + i, 1.0 + i + 1.6, "@master" if i == 2 else f"n{1 + i % 3}")
        for i in range(1, 7)
    ]
    folder = _failed_run(tmp_path, _spec_with(windows))
    reruns: list[RunSpec] = []

    def rerun(spec: RunSpec) -> Rerun:
        reruns.append(spec)
        kept = {w.id: w for w in windows_of(spec.schedule)}
        loses = "f2" in kept and "f4" in kept and (kept["f2"].length_s or 0) >= 1.0
        return Rerun("broken" if loses else "held", ("lost",) if loses else (), tmp_path)

    result = shrink_run(
        folder, budget_s=600, tries=2, out=tmp_path / "out", say=lambda _: None, rerun=rerun
    )
    assert result.reproduced and not result.budget_spent
    final = {line.split()[0]: line for line in result.kept}
    assert set(final) == {"f2", "f4"}
    assert final["f2"] == "f2 pause @master 3–4.6 s"  # halving it would go below 1 s
    assert final["f4"] == "f4 pause n2 5–5.2 s"  # halved while it still reproduced
    assert len(reruns) == result.reruns
    assert result.ops_before == 12 and result.ops_after == 4
    assert result.seconds_after < result.seconds_before
    saved = json.loads((tmp_path / "out" / "shrink.json").read_text())
    assert saved["operations"] == [12, 4] and saved["reruns"] == result.reruns
    assert any(t.get("reproduced") is False for t in saved["tried"])


def test_a_violation_that_never_comes_back_is_not_shrunk(tmp_path: Path) -> None:
    folder = _failed_run(tmp_path, _spec_with([_window("f1", 2.0, 3.0)]))
    result = shrink_run(
        folder,
        budget_s=600,
        tries=3,
        out=tmp_path / "out",
        say=lambda _: None,
        rerun=lambda spec: Rerun("held", (), tmp_path),
    )
    assert not result.reproduced and result.reruns == 3 and result.best_folder is None


def test_a_held_run_has_nothing_to_shrink(tmp_path: Path) -> None:
    folder = _failed_run(tmp_path, _spec_with([_window("f1", 2.0, 3.0)]), kinds=())
    with pytest.raises(UsageError, match="held"):
        shrink_run(folder, budget_s=60, tries=1, out=tmp_path / "o", say=lambda _: None)


SMALL = """
scenario = "random"
seed = 4
[topology]
nodes = 3
[durability]
triplet = "NO_SYNC,NO_SYNC,NONE"
[workload]
producers = 2
consumers = 1
rate = 100.0
duration_s = 10.0
consume_during_load = false
[[fault]]
id = "noise"
fault = "pause"
target = "@replica:2"
start_s = 1.0
end_s = 1.5
[[fault]]
id = "crash"
fault = "isolate"
target = "@master"
start_s = 3.0
end_s = 6.0
"""


@pytest.mark.processes
def test_a_real_loss_under_ack_policy_none_shrinks_to_the_masters_isolation(
    tmp_path: Path,
) -> None:
    """Acknowledgement policy NONE: the master, cut off, goes on acknowledging what no
    replica has; the others elect a new master, and the old one's messages are lost."""
    incident = tmp_path / "none.toml"
    incident.write_text(SMALL, encoding="utf-8")
    first = run_lab("run", "--spec", str(incident), "--runs-dir", str(tmp_path / "r"), cwd=tmp_path)
    assert first.returncode == 1, first.stdout + first.stderr
    folder = first.stdout.splitlines()[0]
    out = tmp_path / "shrunk"
    shrunk = run_lab(
        # A budget a loaded machine's slower reruns fit in too: the shrink ends as soon as
        # nothing smaller is left to try, so a fast machine does not wait for it.
        *("shrink", folder, "--budget", "10m", "--tries", "1", "--out", str(out)),
        cwd=tmp_path,
        timeout=1200,
    )
    assert shrunk.returncode == 0, shrunk.stdout + shrunk.stderr
    saved = json.loads((out / "shrink.json").read_text())
    assert saved["operations"][1] < saved["operations"][0]
    assert [w.split()[0] for w in saved["kept"]] == ["crash"]
    smallest = Path(saved["smallest"])
    assert json.loads((smallest / "result.json").read_text())["violations"] == ["lost"]
    assert f"reproduce: {shown_command('lab')} replay {smallest.absolute()}" in shrunk.stdout


def _shrunk_faults(tmp_path: Path, incident: Path, budget: str) -> list[str]:
    first = run_lab("run", "--spec", str(incident), "--runs-dir", str(tmp_path / "r"), cwd=tmp_path)
    assert first.returncode == 1, first.stdout + first.stderr
    out = tmp_path / "shrunk"
    shrunk = run_lab(
        *("shrink", first.stdout.splitlines()[0], "--budget", budget, "--tries", "2"),
        *("--out", str(out)),
        cwd=tmp_path,
        timeout=3 * 3600,
    )
    assert shrunk.returncode == 0, shrunk.stdout + shrunk.stderr
    saved = json.loads((out / "shrink.json").read_text())
    assert not saved["budget_spent"], "the shrink did not finish in its budget"
    return [window.split()[1] for window in saved["kept"]]


@pytest.mark.long
@pytest.mark.processes
def test_the_ack_none_incident_shrinks_to_the_masters_crash_alone(tmp_path: Path) -> None:
    kept = _shrunk_faults(tmp_path, ROOT / "incidents" / "ack-none-crash.toml", "45m")
    assert kept in (["isolate"], ["isolate", "kill"]), kept  # the lags and the noise go


@pytest.mark.long
@pytest.mark.processes
def test_j8_keeps_its_priority_change_pause_and_kill(tmp_path: Path) -> None:
    """J8 judged by "no acknowledged loss" breaks it; each of its three faults is needed."""
    spec = scenario_named("never-priority-loss").spec(20261121).to_json()
    incident = tmp_path / "j8.json"
    incident.write_text(json.dumps({**spec, "scenario": "incident"}), encoding="utf-8")
    assert sorted(_shrunk_faults(tmp_path, incident, "60m")) == ["kill", "pause", "set_priority"]
