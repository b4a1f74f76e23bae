"""Runs under way on this machine, so a run whose lab process was killed (SIGKILL: no
`finally` ran) is still told in its folder: the next `lab` command finds it and writes
its result.json (verdict `interrupted`, signal SIGKILL, the phase it was in, the faults
that were applied and never healed — their processes died with the lab).

    entry = register(folder)      when the run starts (a small file per run)
    unregister(entry)             when it ends, whatever the way
    settle_orphans()              every dead run's result.json written; their entries gone

An entry names the run's lab process by pid and start time, so a pid used again by
another process is never taken for the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["ACTIVE_DIR", "register", "settle_orphans", "unregister"]

ACTIVE_DIR = Path(tempfile.gettempdir()) / "lab-active-runs"


def _started(pid: int) -> str | None:
    """A process's start time (clock ticks since boot), or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def register(folder: Path) -> Path:
    ACTIVE_DIR.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    entry = ACTIVE_DIR / f"{pid}-{folder.name}.json"
    entry.write_text(
        json.dumps({"pid": pid, "started": _started(pid), "folder": str(folder.resolve())}),
        encoding="utf-8",
    )
    return entry


def unregister(entry: Path) -> None:
    entry.unlink(missing_ok=True)


def _phase_and_left(folder: Path) -> tuple[str, tuple[str, ...]]:
    """The last phase the run reached, and the faults it applied and never healed."""
    from lab.judge.metrics import read_events

    events = read_events(folder / "events.jsonl")
    phases = [str(e.get("phase")) for e in events if e.get("kind") == "workload.phase"]
    reached = [p for p in phases if p not in ("teardown", "end")]
    started = [str(e.get("id")) for e in events if e.get("kind") == "fault.start"]
    ended = {str(e.get("id")) for e in events if e.get("kind") == "fault.end"}
    if "end" in phases:  # torn down: it was judging the run
        return "judge", tuple(f for f in started if f not in ended)
    return (reached[-1] if reached else "setup"), tuple(f for f in started if f not in ended)


def _settle(folder: Path) -> None:
    if (folder / "result.json").is_file() or not (folder / "spec.json").is_file():
        return
    # Loaded only when a dead run is found: every `lab` command looks, few find one.
    from lab.ground.spec import RunSpec
    from lab.judge.result import Interruption, RunResult, judge_run
    from lab.run.reproduce import reproduce_command

    spec = RunSpec.from_json(json.loads((folder / "spec.json").read_text()), folder / "spec.json")
    phase, left = _phase_and_left(folder)
    how = Interruption(
        signal="SIGKILL",
        phase=phase,
        heal_errors=tuple(f"{f}: never healed (it died with the lab's processes)" for f in left),
    )
    judgement = None
    with contextlib.suppress(Exception):  # a history too torn to judge still gets its result
        from scenarios.catalog import scenario_named

        prediction = scenario_named(spec.scenario).in_mode(spec.group.mode).prediction_for(spec)
        from lab.ground.nodes import BROKER_REF_TRAITS
        from lab.judge.bounds import Timings

        judgement = judge_run(
            folder / "history.jsonl",
            folder / "events.jsonl",
            prediction,
            BROKER_REF_TRAITS,
            Timings.of(spec, BROKER_REF_TRAITS),
        )
    RunResult.stopped(spec, how, reproduce_command(spec, folder), judgement).write(
        folder / "result.json"
    )


def settle_orphans() -> list[Path]:
    """Write result.json for every run whose lab process died without doing it."""
    settled: list[Path] = []
    if not ACTIVE_DIR.is_dir():
        return settled
    for entry in sorted(ACTIVE_DIR.glob("*.json")):
        try:
            raw: dict[str, Any] = json.loads(entry.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue  # being written
        if _started(int(raw["pid"])) == raw.get("started"):
            continue  # still running
        folder = Path(str(raw["folder"]))
        with contextlib.suppress(OSError, ValueError, KeyError):
            _settle(folder)
            settled.append(folder)
        entry.unlink(missing_ok=True)
    return settled
