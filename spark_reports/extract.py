"""Extract: run records, histories and events into DataFrames, from JSONL or the Parquet store.

Histories are read with the explicit `schemas.HISTORY` (never inferred) and malformed lines
dropped (formats.md: a torn last line is ignored); each row gets the `run_id` of its folder,
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

from spark_reports.run_folders import RunRecord
from spark_reports.schemas import EVENTS, HISTORY, RUNS

__all__ = [
    "HISTOGRAM_COLUMNS",
    "LATENCY_COLUMNS",
    "history_for",
    "read_events_jsonl",
    "read_history_jsonl",
    "runs_frame",
    "store_history",
    "store_latency",
    "store_runs",
    "stored_history_rows",
]

LATENCY_COLUMNS = ("run_id", "time", "process", "type", "f", "value")
HISTOGRAM_COLUMNS = ("run_id", "metric", "latency_ms", "count")


def runs_frame(spark: SparkSession, records: Sequence[RunRecord]) -> DataFrame:
    """One row per run folder, `schemas.RUNS`."""
    return spark.createDataFrame([r.as_row() for r in records], RUNS)


def _run_id_of_file() -> Column:
    """`<scenario>/<folder>` from `…/<scenario>/<folder>/<file>` (a byte scan, not a regex)."""
    return F.substring_index(F.substring_index(F.col("_metadata.file_path"), "/", -3), "/", 2)


def read_history_jsonl(spark: SparkSession, folders: Sequence[str]) -> DataFrame:
    """The history.jsonl of each folder, `schemas.HISTORY` plus `run_id`.

    Lines that are not JSON objects are dropped; a line lacking a required field keeps its
    nulls (the jobs ignore what they cannot use).
    """
    if not folders:
        return spark.createDataFrame([], HISTORY).withColumn("run_id", F.lit(None).cast("string"))
    frame = (
        spark.read.schema(HISTORY)
        .option("mode", "DROPMALFORMED")
        .json([str(Path(f) / "history.jsonl") for f in folders])
    )
    return frame.withColumn("run_id", _run_id_of_file())


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
    """The compacted run records (`schemas.RUNS` plus `batch`); empty without a store."""
    path = None if store is None else _store_part(store, "runs")
    if path is None:
        empty = spark.createDataFrame([], RUNS)
        return empty.withColumn("batch", F.lit(None).cast("string"))
    frame = spark.read.schema(_with_batch(RUNS)).parquet(str(path))
    return frame.select(*RUNS.fieldNames(), "batch")


def stored_history_rows(spark: SparkSession, store: Path) -> DataFrame:
    """Every history row in STORE/history, committed or not (`schemas.HISTORY` plus keys)."""
    schema = StructType(
        [
            *HISTORY.fields,
            *[StructField(name, StringType()) for name in ("run_id", "batch", "scenario", "date")],
        ]
    )
    return spark.read.schema(schema).parquet(str(store / "history"))


def store_history(spark: SparkSession, store: Path | None, runs: DataFrame) -> DataFrame:
    """Compacted history rows of committed batches: those whose (run_id, batch) is in `runs`."""
    path = None if store is None else _store_part(store, "history")
    if path is None:
        return read_history_jsonl(spark, []).select(*LATENCY_COLUMNS)
    committed = runs.select("run_id", "batch")
    rows = stored_history_rows(spark, path.parent)
    rows = rows.select(*LATENCY_COLUMNS, "batch")
    return rows.join(F.broadcast(committed), ["run_id", "batch"], "left_semi").select(
        *LATENCY_COLUMNS
    )


def store_latency(spark: SparkSession, store: Path | None, runs: DataFrame) -> DataFrame | None:
    """Compacted per-run latency histograms of committed batches; None if the store has none."""
    path = None if store is None else _store_part(store, "latency")
    if path is None:
        return None
    schema = StructType(
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
    rows = spark.read.schema(schema).parquet(str(path))
    committed = F.broadcast(runs.select("run_id", "batch"))
    return rows.join(committed, ["run_id", "batch"], "left_semi").select(*HISTOGRAM_COLUMNS)


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
