"""Compaction: finished runs into a Parquet store the reports read instead of the folders.

    STORE/runs/scenario=<s>/date=<yyyy-mm-dd>/*.parquet     one row per run (schemas.RUNS)
    STORE/history/scenario=<s>/date=<yyyy-mm-dd>/*.parquet  history rows (schemas.HISTORY)
    STORE/events/scenario=<s>/date=<yyyy-mm-dd>/*.parquet   events (schemas.EVENTS + raw)
    STORE/latency/scenario=<s>/date=<yyyy-mm-dd>/*.parquet  each run's latency histogram
                                                            (latency.latency_histogram)
    STORE/latency_rollup/…                                  a batch's histograms summed over
                                                            runs alike (latency.rolled_up)
    STORE/manifest/*.parquet                                what is compacted (`manifest`)

Compaction is incremental: it takes in only the run folders the manifest has not seen (by
run id, signature and content hash), and only those that could be read whole; their rows
come from the folders' Parquet copies (made where missing, `history_copies`). Every row
carries `run_id` and the `batch` that wrote it. A batch writes history, histograms, events
and run records, then its manifest file last: readers take rows only for a run's latest
(run_id, batch) in the manifest, so a batch cut short leaves nothing that counts and its
runs are compacted again next time. One writer at a time.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_reports.extract import (
    complete_rows,
    read_events,
    read_histories,
    runs_frame,
    sources_histogram,
    store_latency,
)
from spark_reports.history_copies import columnar_sources
from spark_reports.latency import rolled_up
from spark_reports.manifest import (
    Entry,
    content_hash,
    read_manifest,
    signature,
    split_seen,
    write_manifest,
)
from spark_reports.run_folders import RunRecord, list_run_folders, read_run
from spark_reports.session import spark_session

__all__ = ["PARTITIONS", "Compaction", "compact", "compact_records"]

PARTITIONS = ("scenario", "date")

Say = Callable[[str], None]


@dataclass(frozen=True)
class Compaction:
    """What one compaction did: run ids written, already there, or left out (unreadable)."""

    batch: str
    compacted: tuple[str, ...]
    already: tuple[str, ...]
    left_out: tuple[str, ...]


def compact(
    runs_dirs: Sequence[Path],
    store: Path,
    *,
    spark: SparkSession | None = None,
    say: Say = lambda text: None,
) -> Compaction:
    """Compact the run folders under `runs_dirs` that STORE has not seen (idempotent)."""
    manifest = read_manifest(store)
    split = split_seen(list_run_folders(runs_dirs), manifest)
    say(
        f"compaction: {len(split.seen)} run folders already in {store}, "
        f"{len(split.unseen)} to look at"
    )
    if split.renewed:
        write_manifest(store, split.renewed)
    records = [read_run(folder) for folder in split.unseen]
    already = tuple(f"{folder.parent.name}/{folder.name}" for folder in split.seen)
    return _compact_new(lambda: spark or spark_session(), records, store, already, say)


def compact_records(
    spark: SparkSession, records: Sequence[RunRecord], store: Path, *, say: Say = lambda text: None
) -> Compaction:
    """Compact the readable runs among `records` that STORE has not seen."""
    manifest = read_manifest(store)
    by_folder = {Path(r.folder): r for r in records}
    split = split_seen(by_folder, manifest)
    if split.renewed:
        write_manifest(store, split.renewed)
    seen = set(split.seen)
    already = tuple(r.run_id for r in records if Path(r.folder) in seen)
    unseen = [r for r in records if Path(r.folder) not in seen]
    return _compact_new(lambda: spark, unseen, store, already, say)


def _compact_new(
    session: Callable[[], SparkSession],
    records: Sequence[RunRecord],
    store: Path,
    already: tuple[str, ...],
    say: Say,
) -> Compaction:
    batch = uuid.uuid4().hex
    new = [r for r in records if r.problem is None]
    result = Compaction(
        batch=batch,
        compacted=tuple(r.run_id for r in new),
        already=already,
        left_out=tuple(r.run_id for r in records if r.problem is not None),
    )
    if not new:
        say(f"compaction: nothing new ({len(already)} runs already in {store})")
        return result
    say(f"compaction: {len(new)} runs into {store} (batch {batch[:8]})")
    entries = _entries(new, batch)
    sources = columnar_sources([r.folder for r in new], say)
    spark = session()
    runs = runs_frame(spark, new).withColumns(
        {"date": F.coalesce(F.col("date"), F.lit("unknown")), "batch": F.lit(batch)}
    )
    places = F.broadcast(runs.select("run_id", *PARTITIONS, "batch"))
    history = read_histories(spark, sources).where(complete_rows())
    _append(history.join(places, "run_id"), store, "history")
    say("compaction: history written")
    histogram = sources_histogram(spark, sources, complete_only=True)
    _append(histogram.join(places, "run_id"), store, "latency")
    # This batch's rows only: the filter on `batch` skips other batches' files by their
    # Parquet statistics.
    written = store_latency(spark, store, runs, rows=F.col("batch") == batch)
    if written is not None:
        _append(rolled_up(written, runs).join(places, "run_id"), store, "latency_rollup")
    say("compaction: latency histograms written, and rolled up")
    _append(read_events(spark, sources).join(places, "run_id"), store, "events")
    say("compaction: events written")
    _append(runs.coalesce(1), store, "runs")
    write_manifest(store, entries)
    say(f"compaction: {len(new)} run records written, manifest committed")
    return result


def _entries(records: Sequence[RunRecord], batch: str) -> list[Entry]:
    """Manifest entries, their signatures and hashes taken before anything is read."""
    folders = [Path(r.folder) for r in records]
    signatures = [signature(folder) for folder in folders]
    with ThreadPoolExecutor(max_workers=2) as pool:
        hashes = list(pool.map(content_hash, folders))
    when = dt.datetime.now(dt.UTC).isoformat()
    return [
        Entry(
            run_id=r.run_id,
            folder=r.folder,
            content_hash=digest,
            signature=mark,
            batch=batch,
            compacted_at=when,
        )
        for r, mark, digest in zip(records, signatures, hashes, strict=True)
    ]


def _append(frame: DataFrame, store: Path, part: str) -> None:
    frame.write.mode("append").partitionBy(*PARTITIONS).parquet(str(store / part))
