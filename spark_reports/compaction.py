"""Compaction: finished runs' JSONL and run records into a Parquet store the jobs prefer.

    STORE/runs/scenario=<s>/date=<yyyy-mm-dd>/*.parquet     one row per run (schemas.RUNS)
    STORE/history/scenario=<s>/date=<yyyy-mm-dd>/*.parquet  history rows (schemas.HISTORY)
    STORE/events/scenario=<s>/date=<yyyy-mm-dd>/*.parquet   events (schemas.EVENTS + raw)
    STORE/latency/scenario=<s>/date=<yyyy-mm-dd>/*.parquet  each run's latency histogram
                                                            (latency.latency_histogram)

Every row carries `run_id` and the `batch` that wrote it. Only runs that could be read whole
are compacted, each once: a run already in STORE/runs is skipped, so compacting again adds
nothing. A batch writes history, events and histograms first and its run records last; readers take
rows only for a (run_id, batch) in STORE/runs, so a batch cut short leaves nothing
that counts and its runs are compacted again next time. One writer at a time.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_reports.extract import (
    LATENCY_COLUMNS,
    read_events_jsonl,
    read_history_jsonl,
    runs_frame,
    store_runs,
    stored_history_rows,
)
from spark_reports.latency import latency_histogram, message_latencies
from spark_reports.run_folders import RunRecord, read_runs
from spark_reports.session import spark_session

__all__ = ["PARTITIONS", "Compaction", "compact", "compact_records"]

PARTITIONS = ("scenario", "date")


@dataclass(frozen=True)
class Compaction:
    """What one compaction did: run ids written, already there, or left out (unreadable)."""

    batch: str
    compacted: tuple[str, ...]
    already: tuple[str, ...]
    left_out: tuple[str, ...]


def _append(frame: DataFrame, path: Path) -> None:
    frame.write.mode("append").partitionBy(*PARTITIONS).parquet(str(path))


def compact_records(
    spark: SparkSession,
    records: Sequence[RunRecord],
    store: Path,
    *,
    say: Callable[[str], None] = lambda text: None,
) -> Compaction:
    """Compact the readable runs among `records` that STORE does not hold yet."""
    batch = uuid.uuid4().hex
    held = {row["run_id"] for row in store_runs(spark, store).select("run_id").collect()}
    readable = [r for r in records if r.problem is None]
    new = [r for r in readable if r.run_id not in held]
    result = Compaction(
        batch=batch,
        compacted=tuple(r.run_id for r in new),
        already=tuple(r.run_id for r in readable if r.run_id in held),
        left_out=tuple(r.run_id for r in records if r.problem is not None),
    )
    if not new:
        say(f"compaction: nothing new ({len(result.already)} runs already in {store})")
        return result
    say(f"compaction: {len(new)} runs into {store} (batch {batch[:8]})")
    runs = runs_frame(spark, new).withColumns(
        {"date": F.coalesce(F.col("date"), F.lit("unknown")), "batch": F.lit(batch)}
    )
    places = F.broadcast(runs.select("run_id", *PARTITIONS, "batch"))
    folders = [r.folder for r in new]
    history = read_history_jsonl(spark, folders)
    required = ("index", "time", "process", "type", "f")
    complete = F.greatest(*[F.col(c).isNull() for c in required]) == F.lit(False)
    _append(history.where(complete).join(places, "run_id"), store / "history")
    say("compaction: history written")
    written = stored_history_rows(spark, store).where(F.col("batch") == batch)
    histogram = latency_histogram(message_latencies(written.select(*LATENCY_COLUMNS)))
    _append(histogram.join(places, "run_id"), store / "latency")
    say("compaction: latency histograms written")
    _append(read_events_jsonl(spark, folders).join(places, "run_id"), store / "events")
    say("compaction: events written")
    _append(runs.coalesce(1), store / "runs")
    say(f"compaction: {len(new)} run records written")
    return result


def compact(
    runs_dirs: Sequence[Path],
    store: Path,
    *,
    spark: SparkSession | None = None,
    say: Callable[[str], None] = lambda text: None,
) -> Compaction:
    """Compact the finished runs under `runs_dirs` into `store` (idempotent)."""
    session = spark or spark_session()
    return compact_records(session, read_runs(runs_dirs), store, say=say)
