"""The `check-command` benchmark: `lab check FILE --json` as a user types it, on a bare
3.09 M-operation history.jsonl (no run folder, no Parquet copy beside it).

Unlike the `checker` benchmark, which times `check_path` inside a child, this times the whole
command: the interpreter's start, the imports, the orphan reaper every command runs first,
reading the JSONL and printing the result. It runs `REPEATS` times (the median is reported),
each compared with what the synthesizer injected; a one-operation history measures the
command's fixed cost. CPU seconds are the children's own (user + system). Target: < 3 s.
"""

from __future__ import annotations

import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lab.bench._base import Benchmark, Say
from lab.bench.checker import SEED, agrees
from lab.bench.history_synth import SynthTruth, synthesize

__all__ = ["BENCHMARK", "Timed"]

OPERATIONS = 3_090_000
REPEATS = 5
SECONDS_TARGET = 3.0


@dataclass(frozen=True)
class Timed:
    """One `lab check` command: wall and CPU seconds."""

    seconds: float
    cpu_seconds: float


def run(say: Say) -> str:
    """The command on a tiny and on a 3.09 M-operation bare history; returns the figure line."""
    workdir = Path(tempfile.mkdtemp(prefix="lab-bench-check-command-"))
    try:
        tiny = workdir / "tiny" / "history.jsonl"
        tiny.parent.mkdir()
        tiny_truth = synthesize(tiny, operations=10, seed=SEED, producers=1, consumers=1)
        big = workdir / "big" / "history.jsonl"
        big.parent.mkdir()
        say(f"synthesizing {OPERATIONS:,} operations into {big}")
        faults = random.Random(SEED)
        truth = synthesize(
            big,
            operations=OPERATIONS,
            seed=SEED,
            lose=faults.randrange(100),
            duplicate=faults.randrange(1000),
            unknown=faults.randrange(1000),
            fail=faults.randrange(1000),
            drain_ok=True,
        )
        say(f"  {truth.operations:,} operations, {big.stat().st_size / 1e6:,.0f} MB")
        fixed = _median([_check(tiny, tiny_truth, say) for _ in range(REPEATS)])
        whole = _median([_check(big, truth, say) for _ in range(REPEATS)])
        leftovers = sorted(p.name for p in big.parent.iterdir() if p != big)
        if leftovers:
            raise RuntimeError(f"lab check wrote beside a bare history: {', '.join(leftovers)}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rate = truth.operations / whole.seconds / 1e6
    return (
        f"check-command: lab check on a bare {truth.operations / 1e6:.2f} M-operation JSONL "
        f"{whole.seconds:.2f} s ({rate:.2f} M ops/s, {whole.cpu_seconds:.2f} s CPU; target "
        f"< {SECONDS_TARGET:.0f} s), of which the command's fixed cost {fixed.seconds:.2f} s "
        f"({fixed.cpu_seconds:.2f} s CPU); median of {REPEATS}"
    )


def _check(history: Path, truth: SynthTruth, say: Say) -> Timed:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "lab", "check", str(history), "--json"],
        cwd=history.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode not in (0, 1, 3):
        raise RuntimeError(f"lab check failed:\n{completed.stderr.strip()}")
    agrees(json.loads(completed.stdout), truth)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    say(f"  {truth.operations:>10,} ops  {seconds:6.2f} s  ({cpu:.2f} s CPU)")
    return Timed(seconds=seconds, cpu_seconds=cpu)


def _median(timings: list[Timed]) -> Timed:
    middle = statistics.median_low(t.seconds for t in timings)
    return next(t for t in timings if t.seconds == middle)


BENCHMARK = Benchmark(
    name="check-command",
    description="lab check FILE --json from the command line on a bare 3.09 M-operation "
    "history.jsonl (seconds, CPU, the command's fixed cost)",
    run=run,
)
