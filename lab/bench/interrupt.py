"""interrupt: runs of `random` stopped at random moments — SIGINT, SIGTERM, or the lab
process killed with SIGKILL — on local processes (and, `--backend docker`, in containers),
each then checked for what it left behind: `lab bench interrupt --runs N` prints "N/N clean".

A run is clean when, after its lab process ended (and, for SIGKILL, after the next `lab`
command), none of its processes lives on (the nodes, Toxiproxy and client workers it
recorded in events.jsonl), no container, network or volume carries its folder's label,
its result.json exists (verdict `interrupted`, or its own verdict when it ended before
the signal), and its history is readable by the checker.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lab.bench._base import Benchmark, Say
from lab.ground.children import process_alive
from lab.ground.paths import LAB_ROOT

__all__ = ["BENCHMARK", "Interrupted", "as_from_a_terminal", "interrupt_once", "leftovers_of"]

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
DEFAULT_RUNS = 20


def _recorded_pids(folder: Path) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    path = folder / "events.jsonl"
    if not path.is_file():
        return found
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        pid = event.get("pid")
        if isinstance(pid, int) and event.get("kind") in (
            "toxiproxy.start",
            "node.start",
            "worker.start",
        ):
            found.append(
                (f"{event['kind']} {event.get('node') or event.get('process') or ''}", pid)
            )
    return found


def _docker_leftovers(folder: Path) -> list[str]:
    if not (os.environ.get("DOCKER_HOST") or Path("/var/run/docker.sock").exists()):
        return []
    from lab.backends.docker.engine import connect, engine_answers
    from lab.backends.docker.labels import WORK_DIR
    from lab.backends.docker.reaper import leftovers

    if not engine_answers():
        return []
    client = connect()
    try:
        found = leftovers(client, f"{WORK_DIR}={folder.resolve()}")
    finally:
        client.close()
    return [*found.containers, *found.networks, *found.volumes]


def leftovers_of(folder: Path) -> list[str]:
    """What a run in `folder` left behind: live processes, containers, networks, volumes."""
    left = [f"{what} (pid {pid})" for what, pid in _recorded_pids(folder) if process_alive(pid)]
    return left + _docker_leftovers(folder)


@dataclass(frozen=True)
class Interrupted:
    signal: str
    after_s: float
    verdict: str | None
    phase: str | None
    left: tuple[str, ...]
    problems: tuple[str, ...]

    @property
    def clean(self) -> bool:
        return not self.left and not self.problems


def _lab(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lab", *args],
        cwd=LAB_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def as_from_a_terminal() -> None:
    """For a child started to be stopped by Ctrl-C (`preexec_fn`): SIGINT as a terminal gives
    it. Started in the background (`&` without job control), a process has SIGINT ignored,
    its children inherit that, and Python then installs no KeyboardInterrupt for it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_once(
    seed: int, backend: str, sig: signal.Signals, after_s: float, runs_dir: Path
) -> Interrupted:
    """Start `lab run random --seed SEED`, send `sig` after `after_s`, and look around."""
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "lab", "run", "random", "--seed", str(seed)),
            *("--backend", backend, "--runs-dir", str(runs_dir)),
        ],
        cwd=LAB_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=as_from_a_terminal,
    )
    time.sleep(after_s)
    proc.send_signal(sig)
    proc.wait(timeout=180)
    problems: list[str] = []
    if sig == signal.SIGKILL:
        _lab("list")  # the next lab command clears what the killed one could not
    folders = [p for p in (runs_dir / "random").glob("*") if not p.is_symlink()]
    if not folders:  # stopped before it made its folder: nothing can have been started
        return Interrupted(sig.name, after_s, None, None, (), ())
    folder = max(folders, key=lambda p: p.stat().st_mtime)
    verdict = phase = None
    result_path = folder / "result.json"
    if result_path.is_file():
        result = json.loads(result_path.read_text(encoding="utf-8"))
        verdict = str(result.get("verdict"))
        phase = (result.get("interrupted") or {}).get("phase")
        if verdict == "interrupted" and result["interrupted"]["signal"] != sig.name:
            problems.append(f"result.json says {result['interrupted']['signal']}")
    else:
        problems.append("no result.json")
    history = folder / "history.jsonl"
    if history.is_file() and history.stat().st_size > 0:  # empty: stopped before any operation
        checked = _lab("check", str(history))
        if checked.returncode == 2:
            problems.append(f"history unreadable: {checked.stderr.strip()}")
    return Interrupted(
        sig.name, after_s, verdict, phase, tuple(leftovers_of(folder)), tuple(problems)
    )


def run_n(say: Say, runs: int, backend: str = "process") -> str:
    rng = random.Random(20261123)
    clean = stopped = 0
    with tempfile.TemporaryDirectory(prefix="lab-bench-interrupt-") as tmp:
        for number in range(1, runs + 1):
            sig = rng.choice(SIGNALS)
            after = round(rng.uniform(0.3, 26.0), 2)
            found = interrupt_once(
                rng.randrange(2**31), backend, sig, after, Path(tmp) / str(number)
            )
            clean += found.clean
            stopped += found.verdict in ("interrupted", None)
            state = (
                "clean" if found.clean else f"NOT clean: {'; '.join(found.left + found.problems)}"
            )
            say(
                f"{number}/{runs}: {found.signal} after {after} s, phase {found.phase}, "
                f"verdict {found.verdict}: {state}"
            )
    return (
        f"interrupt: {clean}/{runs} clean ({backend} backend, random, SIGINT/SIGTERM/SIGKILL "
        f"at random moments; {stopped} stopped by the signal, {runs - stopped} ended first)"
    )


BENCHMARK = Benchmark(
    name="interrupt",
    description="runs of random interrupted at random moments (SIGINT/SIGTERM/SIGKILL): N/N clean",
    run=lambda say: run_n(say, DEFAULT_RUNS),
    run_on=lambda say, backend: run_n(say, DEFAULT_RUNS, backend),
    run_sized=lambda say, backend, runs: run_n(say, runs, backend),
    size_option="runs",
)
