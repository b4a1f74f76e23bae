"""The `checker` benchmark: read and check a synthesized 3-million-operation history.

The history is written in this process; the checker runs in a child process, so the peak
memory reported (`RUSAGE_CHILDREN`) is the checker's alone. The child times its own read
and check and prints the figures as JSON on its last line.
"""

from __future__ import annotations

import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lab.bench._base import Benchmark, Say
from lab.bench.history_synth import synthesize
from lab.ground.paths import LAB_ROOT

__all__ = ["BENCHMARK"]

OPERATIONS = 3_000_000
SEED = 20240607

_CHILD = """
import json, sys, time
from pathlib import Path
from lab.judge.checker import check_table, read_history
started = time.perf_counter()
table = read_history(Path(sys.argv[1]))
read = time.perf_counter()
result = check_table(table)
done = time.perf_counter()
print(json.dumps({"operations": table.num_rows, "read": read - started,
                  "check": done - read, "valid": result.valid}))
"""


def run(say: Say) -> str:
    """Synthesize the history, check it in a child process and return the figure line."""
    workdir = Path(tempfile.mkdtemp(prefix="lab-bench-checker-"))
    try:
        history = workdir / "history.jsonl"
        say(f"synthesizing {OPERATIONS} operations into {history}")
        started = time.perf_counter()
        faults = random.Random(SEED)
        synthesize(
            history,
            operations=OPERATIONS,
            seed=SEED,
            lose=faults.randrange(100),
            duplicate=faults.randrange(1000),
            unknown=faults.randrange(1000),
            fail=faults.randrange(1000),
            drain_ok=True,
        )
        size = history.stat().st_size / 1e6
        say(f"wrote {size:.0f} MB in {time.perf_counter() - started:.2f} s; checking")
        figures = _check_in_child(history)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        say(f"read {figures.read:.2f} s, check {figures.check:.2f} s, valid={figures.valid}")
        seconds = figures.read + figures.check
        rate = figures.operations / seconds / 1e6
        return (
            f"checker: {figures.operations} ops in {seconds:.2f} s = {rate:.2f} M ops/s, "
            f"peak memory {peak:.0f} MB"
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@dataclass(frozen=True)
class _ChildFigures:
    operations: int
    read: float
    check: float
    valid: object


def _check_in_child(history: Path) -> _ChildFigures:
    root = LAB_ROOT
    completed = subprocess.run(
        [sys.executable, "-c", _CHILD, str(history)],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"the checker child failed:\n{completed.stderr.strip()}")
    figures = json.loads(completed.stdout.strip().splitlines()[-1])
    return _ChildFigures(
        operations=int(figures["operations"]),
        read=float(figures["read"]),
        check=float(figures["check"]),
        valid=figures["valid"],
    )


BENCHMARK = Benchmark(
    name="checker",
    description="read and check a synthesized 3,000,000-operation history (time, peak memory)",
    run=run,
)
