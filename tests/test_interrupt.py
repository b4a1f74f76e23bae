"""A real `lab run` stopped mid-fault — Ctrl-C, SIGTERM, or the lab killed — leaves
nothing behind, heals what it applied, and says so in result.json; a few more are
stopped at random moments (`lab bench interrupt --runs N` runs hundreds)."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_lab
from group_helpers import until

from lab.bench.interrupt import as_from_a_terminal, interrupt_once, leftovers_of
from lab.ground.paths import LAB_ROOT
from lab.pytest_plugin import skip_unless_ci

LONG_PAUSE = """
scenario = "incident"
seed = 2
backend = "{backend}"
[topology]
nodes = 3
[workload]
duration_s = 300.0
[[fault]]
id = "stall"
fault = "pause"
target = "@replica:1"
start_s = 1.0
end_s = 290.0
"""
# The run is stopped long before its end: the long load and fault leave a loaded machine all
# the time it needs to reach the moment the tests stop it at.


def _sent(history: Path) -> bool:
    """Whether the history holds a complete send operation (what `check.attempted` counts)."""
    try:
        lines = history.read_text(encoding="utf-8").splitlines(keepends=True)
    except FileNotFoundError:
        return False
    return any(line.endswith("\n") and '"f":"send"' in line for line in lines)


def _start(tmp_path: Path, backend: str) -> tuple[subprocess.Popen[bytes], Path]:
    incident = tmp_path / "stall.toml"
    incident.write_text(LONG_PAUSE.format(backend=backend), encoding="utf-8")
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab", "run", "--spec", str(incident), "--runs-dir", str(runs)],
        cwd=LAB_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=as_from_a_terminal,  # its SIGINT is Ctrl-C's, however pytest was started
    )
    # Stopped once its fault is on and a producer has recorded a send, however long the
    # machine takes to get there (the deadline only ends a hung run).
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        for events in runs.glob("incident/2*/events.jsonl"):
            started = '"fault.start"' in events.read_text(encoding="utf-8")
            if started and _sent(events.parent / "history.jsonl"):
                return proc, events.parent
        assert proc.poll() is None, "the run ended before its fault and its first send"
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the fault never started, or no send was recorded")


def _interrupted(folder: Path) -> dict[str, object]:
    result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    assert result["verdict"] == "interrupted" and result["violations"] == ["interrupted"]
    assert result["check"]["attempted"] > 0  # the history it left was checked
    interrupted: dict[str, object] = result["interrupted"]
    return interrupted


@pytest.mark.processes
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_run_stopped_mid_fault_heals_it_and_says_so(tmp_path: Path, sig: signal.Signals) -> None:
    proc, folder = _start(tmp_path, "process")
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == 130
    said = _interrupted(folder)
    assert said == {"signal": sig.name, "phase": "load", "healed": ["stall"], "heal_errors": []}
    applied = [json.loads(x) for x in (folder / "schedule.jsonl").read_text().splitlines()]
    heal = [e for e in applied if e.get("phase") == "applied" and e["action"] == "stop"]
    assert [(e["id"], e["ok"]) for e in heal] == [("stall", True)]
    assert leftovers_of(folder) == []
    assert (folder / "history.parquet").is_file()  # an interrupted run has its copies too
    assert run_lab("check", str(folder), cwd=tmp_path).returncode in (0, 1, 3)


@pytest.mark.processes
def test_a_killed_lab_is_cleared_up_by_the_next_command(tmp_path: Path) -> None:
    proc, folder = _start(tmp_path, "process")
    proc.kill()
    proc.wait(timeout=30)
    assert not (folder / "result.json").exists()
    # they die with it, once the kernel has delivered each child's parent-death signal
    until(lambda: leftovers_of(folder), lambda left: left == [], timeout_s=60)
    assert run_lab("list", cwd=tmp_path).returncode == 0  # any lab command settles it
    said = _interrupted(folder)
    assert said["signal"] == "SIGKILL" and said["phase"] == "load"
    assert said["heal_errors"] == ["stall: never healed (it died with the lab's processes)"]


@pytest.mark.processes
@pytest.mark.parametrize("seed", [1, 2])
def test_random_moments_leave_nothing(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    sig = rng.choice((signal.SIGINT, signal.SIGTERM, signal.SIGKILL))
    found = interrupt_once(rng.randrange(2**31), "process", sig, rng.uniform(0.3, 24.0), tmp_path)
    assert found.clean, found


@pytest.mark.docker
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_containers_of_a_stopped_run_are_removed(tmp_path: Path, sig: signal.Signals) -> None:
    from lab.backends.docker.engine import can_install, engine_answers

    if not engine_answers() and not can_install():
        skip_unless_ci("no Docker engine answers, and the lab installs one only as root on Debian")
    proc, folder = _start(tmp_path, "docker")
    proc.send_signal(sig)
    proc.wait(timeout=90)
    if sig == signal.SIGKILL:
        assert leftovers_of(folder), "a killed lab leaves its containers until the next command"
        assert run_lab("list", cwd=tmp_path).returncode == 0
    log = tmp_path / ".lab" / "orphans.log"
    said = log.read_text(encoding="utf-8") if log.is_file() else "(nothing logged)"
    assert leftovers_of(folder) == [], f"what the reaper logged: {said}"
    assert _interrupted(folder)["signal"] == sig.name
