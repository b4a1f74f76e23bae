"""`lab report RUNS_DIR… --out DIR [--master URL] [--compact STORE] [--p99-factor F]
[--previous REPORT_DIR]`.

The `lab` command wires `add_arguments` into its `report` sub-command and calls
`run_report`; progress goes through `say`, one line per stage. Every argument is checked
before Spark starts. The first report of an environment records the driver JVM's class
archive as it ends (`session.finish_driver`), so that later reports start sooner.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from lab.ground.errors import UsageError
from spark_reports.defaults import DEFAULT_MASTER

__all__ = ["add_arguments", "run_report"]

DEFAULT_P99_FACTOR = 1.5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs_dirs", nargs="+", type=Path, metavar="RUNS_DIR", help="folders of run folders"
    )
    parser.add_argument("--out", type=Path, required=True, help="where the report goes")
    parser.add_argument(
        "--master",
        default=DEFAULT_MASTER,
        help=f"Spark master URL (default {DEFAULT_MASTER}); on a cluster (spark://HOST:PORT) "
        "the run folders and the store must be on a path every executor sees, and the "
        "executors run this Python (the same virtualenv path)",
    )
    parser.add_argument(
        "--compact",
        type=Path,
        metavar="STORE",
        help="first compact the run folders this Parquet store has not seen (its manifest), "
        "then read every run it holds from it",
    )
    parser.add_argument(
        "--p99-factor",
        type=float,
        default=DEFAULT_P99_FACTOR,
        help=f"flag a p99 that grew by more than this (default {DEFAULT_P99_FACTOR})",
    )
    parser.add_argument(
        "--trend-by",
        choices=("day", "revision"),
        default="day",
        help="trend periods: UTC days or lab git revisions (default day)",
    )
    parser.add_argument(
        "--previous",
        type=Path,
        metavar="REPORT_DIR",
        help="a report made before (last night's): the summary names the violation kinds, "
        "by cell, that it did not show",
    )


def run_report(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Build the report; 0 when it was written. Bad arguments raise `UsageError`."""
    runs_dirs = tuple(Path(d) for d in args.runs_dirs)
    for runs_dir in runs_dirs:
        if not runs_dir.is_dir():
            raise UsageError(f"runs directory {runs_dir} does not exist or is not a directory")
    factor = float(args.p99_factor)
    if not factor > 1.0:
        raise UsageError(f"--p99-factor must be greater than 1, not {args.p99_factor}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    from spark_reports.page_data import read_previous

    previous = None if args.previous is None else read_previous(Path(args.previous))
    from spark_reports.jobs import ReportOptions, run_report_job
    from spark_reports.session import describe, finish_driver, start_driver

    options = ReportOptions(
        runs_dirs=runs_dirs,
        out=out,
        master=str(args.master),
        store=None if args.compact is None else Path(args.compact),
        p99_factor=factor,
        trend_by=args.trend_by,
        previous=previous,
    )
    say(f"spark: starting ({options.master})")
    driver = start_driver(options.master)
    say(describe(driver))
    try:
        page = run_report_job(options, say, driver.spark)
        say(f"report: {page}")
    finally:
        if driver.recording is not None:
            say("spark: recording the class archive for the next reports (once per environment)")
        finish_driver(driver, say)
    return 0
