"""Extract: run records, histories and events into DataFrames, from the run folders' Parquet
copies (or their JSONL) or from the compacted store.

Histories are read with the explicit `schemas.HISTORY` (never inferred): from each folder's
history.parquet (`history_copies`), or from history.jsonl with malformed lines dropped
(docs/run-folder.md: a torn last line is ignored); each row gets the `run_id` of its folder,
`<scenario>/<folder>`, from the file's path. A compacted store (`compaction`) holds the
same data as Parquet, and each run's latency histogram, so that reports need not read its
history again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from spark_reports.history_copies import Sources
from spark_reports.latency import (
    ROLLUP_KEYS,
    copies_histogram,
    latency_histogram,
    message_latencies,
)
from spark_reports.manifest import Commits, committed_rows
from spark_reports.run_folders import RunRecord
from spark_reports.schemas import EVENTS, HISTORY, RUNS

__all__ = [
    "HISTOGRAM_COLUMNS",
    "LATENCY_COLUMNS",
    "complete_rows",
    "history_for",
    "read_events",
    "read_events_jsonl",
    "read_histories",
    "read_history_jsonl",
    "rollup_groups",
    "runs_frame",
    "sources_histogram",
    "store_history",
    "store_latency",
    "store_rollup",
    "store_runs",
    "stored_history_rows",
]

LATENCY_COLUMNS = ("run_id", "time", "process", "type", "f", "value")
_REQUIRED = ("index", "time", "process", "type", "f")


def complete_rows() -> Column:
    """True for a history row with every required field (docs/run-folder.md, history.jsonl)."""
    return F.greatest(*[F.col(c).isNull() for c in _REQUIRED]) == F.lit(False)


HISTOGRAM_COLUMNS = ("run_id", "metric", "latency_ms", "count")
_HISTOGRAM_STORED = StructType(
    [
        StructField("run_id", StringType()),
        StructField("metric", StringType()),
        StructField("latency_ms", DoubleType()),
        StructField("count", LongType()),
        StructField("batch", StringType()),
        StructField("scenario", StringType()),
        StructField("date", StringType()),
    ]
)


def runs_frame(spark: SparkSession, records: Sequence[RunRecord]) -> DataFrame:
    """One row per run folder, `schemas.RUNS`."""
    return spark.createDataFrame([r.as_row() for r in records], RUNS)


def _run_id_of_file() -> Column:
    """`<scenario>/<folder>` from `…/<scenario>/<folder>/<file>` (a byte scan, not a regex)."""
    return F.substring_index(F.substring_index(F.col("_metadata.file_path"), "/", -3), "/", 2)


def read_history_jsonl(spark: SparkSession, folders: Sequence[str]) -> DataFrame:
    """The history.jsonl of each folder, `schemas.HISTORY` plus `run_id`.

    Lines that are not JSON objects are dropped; a line lacking a required field keeps its
    nulls (the jobs ignore what they cannot use; compaction leaves such lines out).
    """
    if not folders:
        return spark.createDataFrame([], HISTORY).withColumn("run_id", F.lit(None).cast("string"))
    frame = (
        spark.read.schema(HISTORY)
        .option("mode", "DROPMALFORMED")
        .json([str(Path(f) / "history.jsonl") for f in folders])
    )
    return frame.withColumn("run_id", _run_id_of_file())


def read_histories(spark: SparkSession, sources: Sources) -> DataFrame:
    """Every history of `sources`: the Parquet copies, and the JSONL of the folders without."""
    jsonl = read_history_jsonl(spark, sources.history_jsonl)
    if not sources.history_parquet:
        return jsonl
    frame = spark.read.schema(HISTORY).parquet(*sources.history_parquet)
    copies = frame.withColumn("run_id", _run_id_of_file())
    return copies.unionByName(jsonl) if sources.history_jsonl else copies


def sources_histogram(
    spark: SparkSession,
    sources: Sources,
    *,
    complete_only: bool = False,
    rollup: Sequence[RunRecord] | None = None,
) -> DataFrame:
    """Each run's latency histogram (`latency.latency_histogram`): from its Parquet copy in
    the tasks, or from its JSONL in Spark (with `complete_only`, complete rows only). Given
    the runs' records as `rollup`, the copies' histograms are summed in the tasks over runs
    alike (`rollup_groups`), as `latency.rolled_up` sums them: far fewer rows."""
    groups = None if rollup is None else rollup_groups(rollup, sources.history_parquet)
    histogram = copies_histogram(spark, sources.history_parquet, groups)
    if not sources.history_jsonl:
        return histogram
    jsonl = read_history_jsonl(spark, sources.history_jsonl)
    if complete_only:
        jsonl = jsonl.where(complete_rows())
    jsonl = jsonl.select(*LATENCY_COLUMNS)
    return histogram.unionByName(latency_histogram(message_latencies(jsonl)))


def rollup_groups(
    records: Sequence[RunRecord], paths: Sequence[str]
) -> list[tuple[str, list[str]]]:
    """The history.parquet `paths` of `records` grouped by every `latency.ROLLUP_KEYS` value
    of their runs, each group under its smallest run id (a run of the group, so its labels
    are the group's)."""
    by_folder = {str(Path(record.folder)): record for record in records}
    groups: dict[tuple[object, ...], list[tuple[str, str]]] = {}
    for path in paths:
        record = by_folder[str(Path(path).parent)]
        key = tuple(getattr(record, column) for column in ROLLUP_KEYS)
        groups.setdefault(key, []).append((record.run_id, path))
    return [(min(members)[0], [path for _, path in sorted(members)]) for members in groups.values()]


def read_events(spark: SparkSession, sources: Sources) -> DataFrame:
    """Every events file of `sources` (the known columns, `raw`, `run_id`)."""
    jsonl = read_events_jsonl(spark, sources.events_jsonl)
    if not sources.events_parquet:
        return jsonl
    schema = StructType([*EVENTS.fields, StructField("raw", StringType())])
    frame = spark.read.schema(schema).parquet(*sources.events_parquet)
    copies = frame.withColumn("run_id", _run_id_of_file())
    return copies.unionByName(jsonl) if sources.events_jsonl else copies


def read_events_jsonl(spark: SparkSession, folders: Sequence[str]) -> DataFrame:
    """The events.jsonl of each folder: the known columns, the whole line as `raw`, `run_id`."""
    if not folders:
        return spark.createDataFrame([], EVENTS).select(
            "*", F.lit(None).cast("string").alias("raw"), F.lit(None).cast("string").alias("run_id")
        )
    lines = spark.read.text([str(Path(f) / "events.jsonl") for f in folders])
    parsed = lines.select(
        F.from_json("value", EVENTS).alias("e"),
        F.col("value").alias("raw"),
        _run_id_of_file().alias("run_id"),
    )
    return parsed.where(F.col("e.kind").isNotNull()).select("e.*", "raw", "run_id")


def _with_batch(schema: StructType) -> StructType:
    return StructType([*schema.fields, StructField("batch", StringType())])


def _store_part(store: Path, part: str) -> Path | None:
    path = store / part
    return path if path.is_dir() and any(path.rglob("*.parquet")) else None


def store_runs(spark: SparkSession, store: Path | None) -> DataFrame:
    """The committed run records (`schemas.RUNS` plus `batch`): each run's latest batch in
    the manifest (every record, in a store older than the manifest); empty without a store."""
    path = None if store is None else _store_part(store, "runs")
    if store is None or path is None:
        empty = spark.createDataFrame([], RUNS)
        return empty.withColumn("batch", F.lit(None).cast("string"))
    frame = spark.read.schema(_with_batch(RUNS)).parquet(str(path))
    frame = frame.select(*RUNS.fieldNames(), "batch")
    committed = committed_rows(store)
    return frame if committed is None else frame.where(committed)


def stored_history_rows(spark: SparkSession, store: Path) -> DataFrame:
    """Every history row in STORE/history, committed or not (`schemas.HISTORY` plus keys)."""
    schema = StructType(
        [
            *HISTORY.fields,
            *[StructField(name, StringType()) for name in ("run_id", "batch", "scenario", "date")],
        ]
    )
    return spark.read.schema(schema).parquet(str(store / "history"))


def store_history(
    spark: SparkSession, store: Path | None, runs: DataFrame, *, rows: Column | None = None
) -> DataFrame:
    """Compacted history rows of committed batches: those whose (run_id, batch) is in `runs`
    (or, given, that the `rows` filter of `manifest.committed_rows` keeps)."""
    path = None if store is None else _store_part(store, "history")
    if path is None:
        return read_history_jsonl(spark, []).select(*LATENCY_COLUMNS)
    history = stored_history_rows(spark, path.parent).select(*LATENCY_COLUMNS, "batch")
    if rows is not None:
        return history.where(rows).select(*LATENCY_COLUMNS)
    committed = F.broadcast(runs.select("run_id", "batch"))
    return history.join(committed, ["run_id", "batch"], "left_semi").select(*LATENCY_COLUMNS)


def store_rollup(spark: SparkSession, store: Path | None, commits: Commits) -> DataFrame | None:
    """The rolled-up histograms (`latency.rolled_up`) of the store's whole batches (runs
    of other batches: `store_latency`); None if the store has none."""
    path = None if store is None else _store_part(store, "latency_rollup")
    if path is None or not commits.whole:
        return None
    rows = spark.read.schema(_HISTOGRAM_STORED).parquet(str(path))
    return rows.where(commits.whole_rows()).select(*HISTOGRAM_COLUMNS)


def store_latency(
    spark: SparkSession, store: Path | None, runs: DataFrame, *, rows: Column | None = None
) -> DataFrame | None:
    """Compacted per-run latency histograms of committed batches (as `store_history`);
    None if the store has none."""
    path = None if store is None else _store_part(store, "latency")
    if path is None:
        return None
    histograms = spark.read.schema(_HISTOGRAM_STORED).parquet(str(path))
    if rows is not None:
        return histograms.where(rows).select(*HISTOGRAM_COLUMNS)
    committed = F.broadcast(runs.select("run_id", "batch"))
    return histograms.join(committed, ["run_id", "batch"], "left_semi").select(*HISTOGRAM_COLUMNS)


def history_for(
    spark: SparkSession,
    from_folders: Sequence[str],
    store: Path | None,
    stored_runs: DataFrame,
) -> DataFrame:
    """Latency columns of every committed run in the store plus those of `from_folders`."""
    jsonl = read_history_jsonl(spark, from_folders).select(*LATENCY_COLUMNS)
    if store is None or _store_part(store, "history") is None:
        return jsonl
    stored = store_history(spark, store, stored_runs)
    return stored.unionByName(jsonl) if from_folders else stored
