"""The training session that makes the report JVM's class archive (`spark_reports.class_archive`):
a small report job, compaction included, over a few synthesized run folders, with the driver's
JVM recording the classes it loads; the archive is dumped when that JVM exits.

    python -m lab.bench.report_classes    make the archive if missing (scripts/bootstrap.sh)
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from lab.bench.synth_runs import synthesize_runs
from spark_reports.class_archive import ensure_archive
from spark_reports.jobs import ReportOptions, run_report_job
from spark_reports.session import spark_session

__all__ = ["main", "make_archive", "train"]


def train(partial: Path, work: Path) -> int | None:
    """Run the training session with its JVM recording into `partial`; the JVM's exit status."""
    runs = work / "runs"
    synthesize_runs(runs, runs=24, operations_per_run=400, seed=7, partial=4)
    spark = spark_session(record_classes=partial)
    gateway = spark.sparkContext._gateway
    options = ReportOptions(runs_dirs=(runs,), out=work / "report", store=work / "store")
    run_report_job(options, lambda text: None)
    spark.stop()
    process = None if gateway is None else getattr(gateway, "proc", None)
    if gateway is not None:
        gateway.shutdown()
    if process is None:
        return None
    if process.stdin is not None:
        process.stdin.close()  # the gateway JVM exits when its stdin closes, dumping the archive
    try:
        return int(process.wait(timeout=600))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None


def make_archive(say: Callable[[str], None]) -> Path | None:
    """The archive, made now by a training session if it is missing; None if it cannot be."""

    def recorded_by_training(partial: Path) -> int | None:
        with tempfile.TemporaryDirectory(prefix="lab-report-classes-") as work:
            return train(partial, Path(work))

    try:
        return ensure_archive(recorded_by_training, say)
    except Exception as exc:  # reports run without the archive, only slower
        say(f"report classes: the training session failed ({type(exc).__name__}: {exc})")
        return None


def main() -> int:
    make_archive(lambda text: print(text, file=sys.stderr, flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
