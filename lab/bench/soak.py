"""soak: a group of three under steady load with a fault every few seconds for N minutes
(`lab bench soak --minutes N`; 2 by default, 30 in the long mode).

The schedule is `random`'s (overlapping kills, pauses, partitions, toxics, transfers, by
the rule that keeps the documents' promise) stretched over the whole load, run as an
incident (so `lab replay FOLDER` reproduces it). While it runs, the nodes' resident
memory and open file descriptors are read from /proc every second. Printed: acknowledged
and lost messages (the checker's), the nodes' RSS and descriptors at the start of the
load and at its end (summed over the three; a restarted node counts with its new
process), their peaks, and the run folder's size per minute of load.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from lab.bench._base import Benchmark, Say
from lab.compose import parts_for
from lab.ground.spec import RunSpec
from lab.run.runner import run_scenario
from scenarios.catalog import scenario_named

__all__ = ["BENCHMARK", "Sample", "run_minutes", "soak_spec"]

DEFAULT_MINUTES = 2
RUNS_DIR = Path("runs")  # where `lab run` puts its runs: the soak's can be replayed from there
WARM_UP_S = 5.0  # the clients' connections are open by then
SEED = 20261123
NODES = 3


@dataclass(frozen=True)
class Sample:
    """The nodes' memory and descriptors at one moment of the run's load."""

    at_s: float
    rss_kib: int
    fds: int
    nodes: int


def soak_spec(minutes: float, seed: int = SEED) -> RunSpec:
    """`random`'s spec over `minutes` of load, as an incident (its schedule is its own)."""
    random = scenario_named("random")
    longer = replace(random, workload=replace(random.workload, duration_s=minutes * 60.0))
    return replace(longer.spec(seed), scenario="incident")


def _node_pids(folder: Path) -> dict[str, int]:
    """Each node's latest process, from events.jsonl's `node.start`."""
    pids: dict[str, int] = {}
    try:
        text = (folder / "events.jsonl").read_text(encoding="utf-8")
    except OSError:
        return pids
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("kind") == "node.start" and isinstance(event.get("pid"), int):
            pids[str(event.get("node"))] = event["pid"]
    return pids


def _phases(folder: Path) -> set[str]:
    """The workload phases events.jsonl has reached."""
    try:
        text = (folder / "events.jsonl").read_text(encoding="utf-8")
    except OSError:
        return set()
    found: set[str] = set()
    for line in text.splitlines():
        if '"workload.phase"' in line:
            try:
                found.add(str(json.loads(line).get("phase")))
            except json.JSONDecodeError:
                continue
    return found


def _measure(pid: int) -> tuple[int, int] | None:
    """(RSS KiB, open descriptors) of a live process; None when it is gone or frozen out."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    rss = next((int(line.split()[1]) for line in status.splitlines() if line[:6] == "VmRSS:"), 0)
    return rss, fds


class _Sampler(threading.Thread):
    """Reads the run's nodes from /proc every second while its load lasts."""

    def __init__(self, runs_dir: Path) -> None:
        super().__init__(daemon=True)
        self.runs_dir = runs_dir
        self.before = set(self._folders())
        self.samples: list[Sample] = []
        self.stop = threading.Event()

    def _folders(self) -> list[Path]:
        return sorted(p for p in (self.runs_dir / "incident").glob("2*") if p.is_dir())

    def run(self) -> None:
        started: float | None = None
        while not self.stop.wait(1.0):
            new = [p for p in self._folders() if p not in self.before]
            if not new:
                continue
            folder = new[-1]
            phases = _phases(folder)
            if "heal" in phases:
                return  # the load is over: what follows is the run's end, not its steady state
            if started is None:
                if "load" not in phases:
                    continue
                started = time.monotonic()
            seen = [m for m in map(_measure, _node_pids(folder).values()) if m is not None]
            self.samples.append(
                Sample(
                    round(time.monotonic() - started, 1),
                    sum(m[0] for m in seen),
                    sum(m[1] for m in seen),
                    len(seen),
                )
            )


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _whole(samples: list[Sample]) -> list[Sample]:
    return [s for s in samples if s.nodes == NODES]


def run_minutes(say: Say, minutes: float) -> str:
    spec = soak_spec(minutes)
    faults = len({op.id for op in spec.schedule})
    parts = parts_for("incident", "process", "broker_ref")
    say(f"soak: {minutes:g} min of load, {faults} faults (random's rule, seed {SEED})")
    sampler = _Sampler(RUNS_DIR)
    sampler.start()
    try:
        outcome = run_scenario(spec, parts, RUNS_DIR, progress=_Every(say, 30.0))
    finally:
        sampler.stop.set()
        sampler.join(timeout=5)
    size = _folder_bytes(outcome.folder.path)
    check = outcome.judgement.check
    whole = [s for s in _whole(sampler.samples) if s.at_s >= WARM_UP_S]
    if len(whole) < 2:
        raise RuntimeError("soak: the nodes were never all measured during the load")
    first, last = whole[0], whole[-1]
    peak_rss = max(s.rss_kib for s in whole)
    peak_fds = max(s.fds for s in whole)
    say(f"  nodes' RSS through the load: {_course(whole)}")
    say(f"  verdict {outcome.judgement.verdict.outcome}, run folder {outcome.folder.path}")
    say(f"  reproduce: {outcome.reproduce}")
    return (
        f"soak: {minutes:g} min, {faults} faults, {check.acknowledged:,} acknowledged, "
        f"{check.lost.count} lost; nodes' RSS {first.rss_kib / 1024:.0f} MiB at "
        f"{first.at_s:.0f} s → {last.rss_kib / 1024:.0f} MiB at {last.at_s:.0f} s "
        f"(peak {peak_rss / 1024:.0f}), open fds {first.fds} → {last.fds} (peak {peak_fds}); "
        f"run folder {size / 1024 / max(minutes, 1e-9):.0f} KiB per minute"
    )


def _course(samples: list[Sample], parts: int = 6) -> str:
    """The RSS at evenly spaced moments of the load: a steady rise is growth, a step that
    stays is a peak the allocator kept."""
    chosen = [samples[round(i * (len(samples) - 1) / parts)] for i in range(parts + 1)]
    return ", ".join(f"{s.rss_kib / 1024:.0f} MiB at {s.at_s:.0f} s" for s in chosen)


class _Every:
    """The run's progress through `say`: phases, and the counters every `every_s` seconds
    (not each fault: they come every few seconds)."""

    def __init__(self, say: Say, every_s: float) -> None:
        self.say = say
        self.every_s = every_s
        self._last = 0.0

    def phase(self, name: str) -> None:
        self.say(f"  phase: {name}")

    def note(self, text: str) -> None:
        return None

    def counts(self, elapsed_s: float, acknowledged: int, received: int) -> None:
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            self.say(f"  t={elapsed_s:.0f} s acknowledged {acknowledged:,} received {received:,}")

    def close(self) -> None:
        return None


BENCHMARK = Benchmark(
    name="soak",
    description="a group of 3 under load with a fault every few seconds for N minutes "
    "(--minutes, default 2): lost messages, nodes' RSS and fds at start and end",
    run=lambda say: run_minutes(say, DEFAULT_MINUTES),
    run_sized=lambda say, backend, size: run_minutes(say, size),
    size_option="minutes",
)
