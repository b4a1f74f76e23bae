"""The report JVM's class archive (`spark_reports.class_archive`) made ahead of time, the way
a user's first report makes it: `lab report` (compaction included) over a few synthesized
run folders, in a process of its own, whose driver records the archive as it ends. When
another report is recording it already, this waits for that one instead.

    python -m lab.bench.report_classes    make the archive if missing (e.g. a CI image)
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lab.bench.synth_runs import synthesize_runs
from lab.ground.paths import LAB_ROOT
from spark_reports.class_archive import archive_path, remove_stale

__all__ = ["main", "make_archive"]

Say = Callable[[str], None]
_WAIT_S = 1800.0


def _first_report(work: Path, say: Say) -> None:
    runs = work / "runs"
    synthesize_runs(runs, runs=24, operations_per_run=400, seed=7, partial=4)
    command = [
        *(sys.executable, "-m", "lab", "report", str(runs)),
        *("--out", str(work / "report"), "--compact", str(work / "store")),
    ]
    done = subprocess.run(command, cwd=LAB_ROOT, capture_output=True, text=True, check=False)
    for line in done.stderr.splitlines():
        if line.startswith("spark:"):
            say(f"  {line}")
    if done.returncode != 0:
        say(f"report classes: the first report failed ({done.returncode}): {done.stderr[-500:]}")


def _wait_for_other(final: Path, say: Say) -> None:
    """While another live process records the archive (its partial file), wait for it."""
    deadline = time.monotonic() + _WAIT_S
    said = False
    while not final.is_file() and time.monotonic() < deadline:
        remove_stale(final.parent)
        if not any(final.parent.glob(f"{final.stem}.*.partial")):
            return
        if not said:
            say("report classes: another report is recording the archive; waiting for it")
            said = True
        time.sleep(1.0)


def make_archive(say: Say) -> Path | None:
    """The archive, made now by a first report if it is missing; None if it cannot be."""
    final = archive_path()
    if final is None:
        say("report classes: no JVM (java) found; reports run without an archive")
        return None
    if final.is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    _wait_for_other(final, say)
    if not final.is_file():
        say("report classes: none yet; a first report over 24 synthesized runs records it")
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="lab-report-classes-") as work:
            _first_report(Path(work), say)
        _wait_for_other(final, say)
        say(f"report classes: {time.perf_counter() - started:.0f} s")
    return final if final.is_file() else None


def main() -> int:
    made = make_archive(lambda text: print(text, file=sys.stderr, flush=True))
    print(made or "no class archive")
    return 0 if made is not None else 1


if __name__ == "__main__":
    raise SystemExit(main())
