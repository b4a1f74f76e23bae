"""The `cli-startup` benchmark: how long a `lab` command takes before it does its work.

`lab list` as a user types it (the interpreter's start, the imports, the orphan reaper every
command runs first, the scenarios and targets listed), and `lab --help` (the parser alone),
each run `REPEATS` times after one warm-up; the median is reported. One more `lab list`
under `-X importtime` says which of the optional packages (lab.ground.extras) it imported:
none is the target, since a first run installs none of them.
Target: `lab list` median <= 0.75 s, with no optional package imported.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab.bench._base import Benchmark, Say
from lab.ground.extras import EXTRAS

__all__ = ["BENCHMARK", "imported_modules"]

REPEATS = 10
LIST_TARGET_S = 0.75


def _timed(args: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "lab", *args], cwd=cwd, capture_output=True, check=True)
    return time.perf_counter() - started


def imported_modules(importtime_lines: str) -> set[str]:
    """The modules named by `python -X importtime` output (its stderr)."""
    found: set[str] = set()
    for line in importtime_lines.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                found.add(name)
    return found


def run(say: Say) -> str:
    with tempfile.TemporaryDirectory(prefix="lab-bench-cli-startup-") as tmp:
        cwd = Path(tmp)
        medians: dict[str, float] = {}
        for label, args in (("lab list", ["list"]), ("lab --help", ["--help"])):
            _timed(args, cwd)  # warm-up: the file system's caches, byte code
            times = [_timed(args, cwd) for _ in range(REPEATS)]
            medians[label] = statistics.median(times)
            say(
                f"{label}: median {medians[label]:.3f} s, best {min(times):.3f} s, "
                f"worst {max(times):.3f} s ({REPEATS} runs)"
            )
        traced = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "lab", "list"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
        )
    modules = imported_modules(traced.stderr)
    optional = sorted(m for extra in EXTRAS for m in extra.modules if m in modules)
    met = medians["lab list"] <= LIST_TARGET_S and not optional
    return (
        f"cli-startup: lab list median {medians['lab list']:.3f} s, lab --help "
        f"{medians['lab --help']:.3f} s; optional packages imported by lab list: "
        f"{', '.join(optional) or 'none'} ({len(modules)} modules in all; target: lab list "
        f"<= {LIST_TARGET_S} s with none imported: {'met' if met else 'missed'})"
    )


BENCHMARK = Benchmark(
    "cli-startup",
    "seconds from typing `lab list` (and `lab --help`) to its answer; optional packages imported",
    run,
)
