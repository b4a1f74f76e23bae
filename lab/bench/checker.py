"""The `checker` benchmark: `lab check` on synthesized 3 M- and 30 M-operation histories.

Each history is written into a run folder with its Parquet copy (`write_columnar_copies`,
as the runner does), then checked in a child process, once from the copy and once with the
copy moved away (the JSONL is read); the child times `check_path` and reports its own peak
memory (`VmHWM`), so the figures are the checker's alone. Each result is compared with
what the synthesizer injected. Targets: ≥ 2.5 M ops/s on 3 M operations; 30 M operations in
≤ 20 s with a peak ≤ 1.5 GB. The 3 M checks run `REPEATS` times (the median is reported).
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lab.bench._base import Benchmark, Say
from lab.bench.history_synth import SynthTruth, synthesize
from lab.ground.paths import LAB_ROOT
from lab.judge.columnar import write_columnar_copies

__all__ = ["BENCHMARK", "Checked", "agrees"]

SMALL, LARGE = 3_000_000, 30_000_000
SEED = 20240607
REPEATS = 3
RATE_TARGET = 2.5
SECONDS_TARGET = 20.0
PEAK_TARGET_MB = 1500.0

Source = Literal["parquet", "jsonl"]

# Peak memory is VmHWM, the high-water mark of the child's own address space: ru_maxrss
# would carry over the forking parent's (Linux keeps it across exec).
_CHILD = """
import json, sys, time
from pathlib import Path
from lab.judge.checker import check_path
started = time.perf_counter()
result = check_path(Path(sys.argv[1]))
seconds = time.perf_counter() - started
status = Path("/proc/self/status").read_text().splitlines()
peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
print(json.dumps({"seconds": seconds, "peak_mb": peak, "result": result.to_json()}))
"""


@dataclass(frozen=True)
class Checked:
    """One check in a child process: seconds, peak memory, operations."""

    source: Source
    operations: int
    seconds: float
    peak_mb: float

    @property
    def rate(self) -> float:
        """Million operations per second."""
        return self.operations / self.seconds / 1e6


def run(say: Say) -> str:
    """Both histories, both sources; returns the figure line."""
    workdir = Path(tempfile.mkdtemp(prefix="lab-bench-checker-"))
    try:
        small = _measure(workdir / "small", SMALL, REPEATS, say)
        shutil.rmtree(workdir / "small")
        large = _measure(workdir / "large", LARGE, 1, say)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    small_parquet, small_jsonl = _median(small["parquet"]), _median(small["jsonl"])
    large_parquet, large_jsonl = large["parquet"][0], large["jsonl"][0]
    return (
        f"checker: 3 M ops {small_parquet.rate:.2f} M ops/s from Parquet "
        f"(target ≥ {RATE_TARGET}), {small_jsonl.rate:.2f} M ops/s from JSONL; "
        f"30 M ops {large_parquet.seconds:.1f} s from Parquet, {large_jsonl.seconds:.1f} s "
        f"from JSONL (target ≤ {SECONDS_TARGET:.0f} s), peak memory "
        f"{large_parquet.peak_mb:.0f} / {large_jsonl.peak_mb:.0f} MB "
        f"(target ≤ {PEAK_TARGET_MB:.0f})"
    )


def _measure(folder: Path, operations: int, repeats: int, say: Say) -> dict[str, list[Checked]]:
    folder.mkdir(parents=True)
    history = folder / "history.jsonl"
    say(f"synthesizing {operations:,} operations into {history}")
    started = time.perf_counter()
    faults = random.Random(SEED)
    truth = synthesize(
        history,
        operations=operations,
        seed=SEED,
        lose=faults.randrange(100),
        duplicate=faults.randrange(1000),
        unknown=faults.randrange(1000),
        fail=faults.randrange(1000),
        drain_ok=True,
    )
    size = history.stat().st_size / 1e6
    say(f"  {size:,.0f} MB in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    write_columnar_copies(folder)
    copy = folder / "history.parquet"
    say(
        f"  Parquet copy: {copy.stat().st_size / 1e6:,.0f} MB "
        f"in {time.perf_counter() - started:.1f} s"
    )
    figures: dict[str, list[Checked]] = {"parquet": [], "jsonl": []}
    for _ in range(repeats):
        figures["parquet"].append(_check_in_child(folder, "parquet", truth, say))
    aside = folder / "aside.parquet"
    copy.rename(aside)
    try:
        for _ in range(repeats):
            figures["jsonl"].append(_check_in_child(folder, "jsonl", truth, say))
    finally:
        aside.rename(copy)
    return figures


def _check_in_child(folder: Path, source: Source, truth: SynthTruth, say: Say) -> Checked:
    completed = subprocess.run(
        [sys.executable, "-c", _CHILD, str(folder)],
        cwd=LAB_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"the checker child failed:\n{completed.stderr.strip()}")
    figures = json.loads(completed.stdout.strip().splitlines()[-1])
    agrees(figures["result"], truth)
    checked = Checked(
        source=source,
        operations=truth.operations,
        seconds=float(figures["seconds"]),
        peak_mb=float(figures["peak_mb"]),
    )
    say(
        f"  {source:<7} {checked.seconds:6.2f} s = {checked.rate:.2f} M ops/s, "
        f"peak {checked.peak_mb:,.0f} MB"
    )
    return checked


def agrees(result: dict[str, object], truth: SynthTruth) -> None:
    """The child's result must be what was injected, or the figure means nothing."""
    expected = {
        "valid": truth.valid,
        "attempted": truth.attempted,
        "acknowledged": truth.acknowledged,
        "received": truth.received,
        "lost": len(truth.lost),
        "duplicate_deliveries": truth.duplicate_deliveries,
    }
    found = {
        key: value["count"] if isinstance(value, dict) else value
        for key, value in result.items()
        if key in expected
    }
    if found != expected:
        raise RuntimeError(f"the checker found {found}, the synthesizer injected {expected}")


def _median(checks: list[Checked]) -> Checked:
    middle = statistics.median_low(c.seconds for c in checks)
    return next(c for c in checks if c.seconds == middle)


BENCHMARK = Benchmark(
    name="checker",
    description="lab check on 3 M- and 30 M-operation histories, from Parquet and from JSONL "
    "(rate, seconds, peak memory)",
    run=run,
)
