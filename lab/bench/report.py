"""The `report` benchmark: the reliability + performance reports at campaign scale.

Three measurements, each step in a fresh process (`report_steps`, Spark's start included),
with DuckDB's time for the same aggregations over the same data beside it as a yardstick:

    folders     1,000 runs / 10 M operations read from their run folders (Parquet copies)
                                                                          target ≤ 15 s
    store       10,000 runs / 100 M operations from the compacted store   target ≤ 60 s
    incremental 100 new runs compacted into that store of 10,000          target ≤ 20 s

The run folders are synthesized (`synth_runs`, with the copies the runner writes); building
the 10,000-run store is set-up, timed and printed but not a target, and so is making the
report JVM's class archive when it is missing (`report_classes`; every report maps it, as
after scripts/bootstrap.sh).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lab.bench._base import Benchmark, Say
from lab.ground.paths import LAB_ROOT

__all__ = ["BENCHMARK"]

RUNS, LARGE_RUNS, NEW_RUNS = 1_000, 10_000, 100
OPERATIONS_PER_RUN = 10_000
SEED = 20240607
TARGETS = {"folders": 15.0, "store": 60.0, "incremental": 20.0}


def _step(step: str, runs_dir: Path, store: Path | None, say: Say) -> dict[str, Any]:
    """One `report_steps` step in a child process; its JSON figures."""
    command = [sys.executable, "-m", "lab.bench.report_steps", step, str(runs_dir)]
    if store is not None:
        command.append(str(store))
    completed = subprocess.run(command, cwd=LAB_ROOT, capture_output=True, text=True, check=False)
    lines = [line for line in completed.stderr.splitlines() if line.startswith(("extract", "comp"))]
    for line in lines:
        say(f"    {line}")
    if completed.returncode != 0:
        raise RuntimeError(f"report step {step} failed:\n{completed.stderr.strip()[-4000:]}")
    figures: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    say(f"  {step}: {figures['seconds']:.1f} s ({figures['cpu_seconds']:.0f} CPU s)")
    return figures


def _synthesize(root: Path, runs: int, seed: int, partial: int, say: Say) -> int:
    from lab.bench.synth_runs import synthesize_runs

    started = time.perf_counter()
    say(f"synthesizing {runs:,} runs × {OPERATIONS_PER_RUN:,} operations into {root}")
    synth = synthesize_runs(
        root,
        runs=runs,
        operations_per_run=OPERATIONS_PER_RUN,
        seed=seed,
        partial=partial,
        workers=2,
        say=lambda text: None,
    )
    say(f"  {synth.operations:,} operations in {time.perf_counter() - started:.0f} s")
    return synth.operations


def run(say: Say) -> str:
    from lab.bench.report_classes import make_archive

    archive = make_archive(say)
    say(f"report JVM class archive: {archive or 'none (each step loads its classes)'}")
    workdir = Path(tempfile.mkdtemp(prefix="lab-bench-report-"))
    try:
        small = workdir / "runs-1k"
        small_ops = _synthesize(small, RUNS, SEED, 4, say)
        folders = _step("folders", small, None, say)
        duck_folders = _step("duckdb-folders", small, None, say)
        shutil.rmtree(small)

        large, store = workdir / "runs-10k", workdir / "store"
        large_ops = _synthesize(large, LARGE_RUNS, SEED + 1, 4, say)
        say("building the store (set-up)")
        built = _step("compact", large, store, say)
        from_store = _step("store", large, store, say)
        duck_store = _step("duckdb-store", large, store, say)

        _synthesize(large, NEW_RUNS, SEED + 2, 0, say)
        incremental = _step("compact", large, store, say)
        if incremental["compacted"] != NEW_RUNS:
            raise RuntimeError(f"compacted {incremental['compacted']} runs, not {NEW_RUNS}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return (
        f"report: {RUNS:,} runs / {small_ops / 1e6:.0f} M ops from folders "
        f"{folders['seconds']:.1f} s (target ≤ {TARGETS['folders']:.0f}; DuckDB "
        f"{duck_folders['seconds']:.1f} s); {LARGE_RUNS:,} runs / {large_ops / 1e6:.0f} M ops "
        f"from the store {from_store['seconds']:.1f} s (target ≤ {TARGETS['store']:.0f}; "
        f"DuckDB {duck_store['seconds']:.1f} s); +{NEW_RUNS} runs compacted "
        f"{incremental['seconds']:.1f} s (target ≤ {TARGETS['incremental']:.0f}); "
        f"store built in {built['seconds']:.0f} s"
    )


BENCHMARK = Benchmark(
    name="report",
    description="reports over 1,000 run folders, a 10,000-run store, and 100 runs compacted "
    "into it (Spark; DuckDB as yardstick)",
    run=run,
    needs=("reports",),
)
