"""The `report` benchmark: the reliability + performance jobs over 1,000 runs / 10 M operations.

A synthetic run store is written to a temporary folder; the jobs run from its JSONL (the
Spark session's start included), it is compacted, and the jobs run again from the Parquet
store; DuckDB does the same aggregations over the same files as a yardstick. Targets:
≤ 60 s from JSONL, ≤ 15 s from Parquet.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from lab.bench._base import Benchmark, Say

__all__ = ["BENCHMARK"]

RUNS = 1_000
OPERATIONS_PER_RUN = 10_000
SEED = 20240607


def _spark_jobs(store: Path | None, runs_dir: Path, say: Say) -> tuple[int, int]:
    """Reliability + performance tables, collected; (reliability rows, performance rows)."""
    from spark_reports.jobs import extract_inputs
    from spark_reports.performance import change_vs_baseline, performance_table
    from spark_reports.reliability import broken_runs, reliability_table, unreadable_runs
    from spark_reports.session import spark_session

    spark = spark_session()
    inputs = extract_inputs(spark, [runs_dir], store, say)
    runs = inputs.runs.cache()
    reliability = reliability_table(runs).collect()
    broken_runs(runs).collect()
    unreadable_runs(runs).collect()
    performance = change_vs_baseline(performance_table(runs, inputs.histogram)).collect()
    runs.unpersist()
    return len(reliability), len(performance)


def run(say: Say) -> str:
    from lab.bench.synth_runs import synthesize_runs
    from spark_reports.compaction import compact
    from spark_reports.duckdb_baseline import duckdb_reports
    from spark_reports.run_folders import read_runs
    from spark_reports.session import spark_session

    workdir = Path(tempfile.mkdtemp(prefix="lab-bench-report-"))
    try:
        runs_dir, store = workdir / "runs", workdir / "store"
        say(f"synthesizing {RUNS} runs × {OPERATIONS_PER_RUN} operations into {runs_dir}")
        started = time.perf_counter()
        synth = synthesize_runs(
            runs_dir,
            runs=RUNS,
            operations_per_run=OPERATIONS_PER_RUN,
            seed=SEED,
            workers=2,
            say=say,
        )
        say(f"wrote {synth.operations:,} operations in {time.perf_counter() - started:.1f} s")

        say("Spark from JSONL (session start included)")
        started = time.perf_counter()
        rows = _spark_jobs(None, runs_dir, say)
        spark_jsonl = time.perf_counter() - started
        say(f"  {spark_jsonl:.1f} s ({rows[0]} reliability rows, {rows[1]} performance rows)")

        say("compacting into Parquet")
        started = time.perf_counter()
        compact([runs_dir], store, spark=spark_session(), say=say)
        compaction = time.perf_counter() - started

        say("Spark from Parquet")
        started = time.perf_counter()
        rows = _spark_jobs(store, runs_dir, say)
        spark_parquet = time.perf_counter() - started
        say(f"  {spark_parquet:.1f} s ({rows[0]} reliability rows, {rows[1]} performance rows)")

        records = read_runs([runs_dir])
        folders = [r.folder for r in records if r.problem is None]
        say("DuckDB from JSONL")
        started = time.perf_counter()
        duckdb_reports(records, jsonl=folders)
        duck_jsonl = time.perf_counter() - started
        say("DuckDB from Parquet")
        started = time.perf_counter()
        duckdb_reports(records, parquet=store)
        duck_parquet = time.perf_counter() - started
        say(f"  DuckDB {duck_jsonl:.1f} s from JSONL, {duck_parquet:.1f} s from Parquet")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return (
        f"report: {RUNS} runs / {synth.operations / 1e6:.1f} M ops — Spark {spark_jsonl:.1f} s "
        f"from JSONL (target 60), {spark_parquet:.1f} s from Parquet (target 15); "
        f"compaction {compaction:.1f} s; DuckDB {duck_jsonl:.1f} s / {duck_parquet:.1f} s; "
        f"Spark/DuckDB {spark_jsonl / duck_jsonl:.1f}× JSONL, "
        f"{spark_parquet / duck_parquet:.1f}× Parquet"
    )


BENCHMARK = Benchmark(
    name="report",
    description="reliability + performance reports over 1,000 runs / 10 M operations "
    "(Spark from JSONL and Parquet, DuckDB as yardstick)",
    run=run,
)
