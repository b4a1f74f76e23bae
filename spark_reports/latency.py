"""Latencies: per message from a history, then as histograms, then as percentiles.

    send→ack      a value's send `ok` minus the latest send `invoke` of the same process
    send→receive  a value's first `receive ok` minus its first send `invoke`

Percentiles over millions of messages come from histograms: each latency is rounded to
three significant digits (a relative error below 0.5 %) and counted per run, so a group's
percentile is exact over the rounded values and the per-run histograms are small enough
to keep. The p-th percentile is the smallest value with at least p % of the group at or
below it. `copies_histogram` computes the same histograms from runs' history.parquet files,
a run per file inside the tasks.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from spark_reports.latency_files import HISTOGRAM_ARRAYS, group_histograms, run_id_of_path

__all__ = [
    "PERCENTILES",
    "ROLLUP_KEYS",
    "copies_histogram",
    "histogram_percentiles",
    "latency_histogram",
    "message_latencies",
    "rolled_up",
    "significant",
]

PERCENTILES = (50, 95, 99)
ROLLUP_KEYS = (
    "scenario",
    "target",
    "backend",
    "nodes",
    "master_sync",
    "replica_sync",
    "ack_policy",
    "coalescing_sync",
    "producers",
    "consumers",
    "date",
    "git_revision",
)
"""Every run column a report's latency groups are made of (labels, periods included)."""
METRICS = ("ack", "receive")
_NS_PER_MS = 1_000_000.0


def message_latencies(history: DataFrame) -> DataFrame:
    """One row per (run_id, value): `ack_ms`, `receive_ms` and `ack_matched`.

    One aggregation per value. Its send→ack is exact when one process sent it and no send
    invoke follows its first ok, which holds for every history a client following the
    history format (docs/run-folder.md) writes (a re-send keeps its process and happens only
    before an ok); for any other value `ack_ms` is null and `ack_matched` false, so it is
    counted, not guessed.
    """
    send, receive = F.col("f") == "send", F.col("f") == "receive"
    invoke, ok = F.col("type") == "invoke", F.col("type") == "ok"
    sender = F.when(send, F.col("process"))
    per_value = (
        history.where(send | receive)
        .groupBy("run_id", "value")
        .agg(
            F.min(F.when(send & ok, F.col("time"))).alias("ok_ns"),
            F.min(F.when(send & invoke, F.col("time"))).alias("first_invoke_ns"),
            F.max(F.when(send & invoke, F.col("time"))).alias("last_invoke_ns"),
            F.min(F.when(receive & ok, F.col("time"))).alias("receive_ns"),
            (F.min(sender) == F.max(sender)).alias("one_sender"),
        )
    )
    matched = (
        F.col("ok_ns").isNotNull()
        & F.col("one_sender")
        & (F.col("last_invoke_ns") <= F.col("ok_ns"))
    )
    return per_value.select(
        "run_id",
        "value",
        F.when(matched, (F.col("ok_ns") - F.col("last_invoke_ns")) / _NS_PER_MS).alias("ack_ms"),
        ((F.col("receive_ns") - F.col("first_invoke_ns")) / _NS_PER_MS).alias("receive_ms"),
        (F.col("ok_ns").isNull() | F.coalesce(matched, F.lit(False))).alias("ack_matched"),
    )


def significant(column: Column, digits: int = 3) -> Column:
    """`column` rounded to `digits` significant digits (non-positive values unchanged)."""
    exponent = F.floor(F.log10(column)) - (digits - 1)
    scaled_down = F.round(column * F.pow(F.lit(10.0), -exponent)) / F.pow(F.lit(10.0), -exponent)
    scaled_up = F.round(column / F.pow(F.lit(10.0), exponent)) * F.pow(F.lit(10.0), exponent)
    return F.when(column <= 0, column).when(exponent < 0, scaled_down).otherwise(scaled_up)


def latency_histogram(latencies: DataFrame) -> DataFrame:
    """(run_id, metric, latency_ms, count): `message_latencies` counted per rounded value.

    `metric` is "ack" or "receive"; "ack_unmatched" rows (latency 0) count the values whose
    send→ack could not be matched.
    """
    melted = latencies.select(
        "run_id",
        F.explode(
            F.array(
                *[
                    F.struct(F.lit(m).alias("metric"), F.col(f"{m}_ms").alias("ms"))
                    for m in METRICS
                ],
                F.struct(
                    F.lit("ack_unmatched").alias("metric"),
                    F.when(~F.col("ack_matched"), F.lit(0.0)).alias("ms"),
                ),
            )
        ).alias("m"),
    )
    return (
        melted.where(F.col("m.ms").isNotNull())
        .select(
            "run_id",
            F.col("m.metric").alias("metric"),
            significant(F.col("m.ms")).alias("latency_ms"),
        )
        .groupBy("run_id", "metric", "latency_ms")
        .agg(F.count("*").alias("count"))
    )


def copies_histogram(
    spark: SparkSession,
    paths: Sequence[str],
    groups: Sequence[tuple[str, Sequence[str]]] | None = None,
) -> DataFrame:
    """`latency_histogram(message_latencies(…))` of the runs whose history.parquet files are
    `paths`, computed file by file inside the tasks (`latency_files`): no shuffle. Given
    `groups` (run id, files) instead, each group's files are summed under its run id there
    (as `rolled_up` sums them)."""
    context = spark.sparkContext
    if groups is None:
        groups = [(run_id_of_path(path), [path]) for path in paths]
    if not groups:
        empty = spark.createDataFrame([], HISTOGRAM_ARRAYS)
        return empty.select("run_id", "metric", F.inline(F.arrays_zip("latency_ms", "count")))
    slices = max(1, min(len(groups), 4 * context.defaultParallelism))
    rows = context.parallelize(list(groups), slices).mapPartitions(group_histograms)
    arrays = spark.createDataFrame(rows, HISTOGRAM_ARRAYS, verifySchema=False)
    return arrays.select("run_id", "metric", F.inline(F.arrays_zip("latency_ms", "count")))


def rolled_up(histogram: DataFrame, runs: DataFrame) -> DataFrame:
    """`histogram` (per run) summed over the runs that agree on every `ROLLUP_KEYS` column,
    each sum under the smallest run id among them: far fewer rows, and the same sums for any
    report group, which is made of those columns (`runs` holds every run of `histogram`)."""
    representative = F.min("run_id").over(Window.partitionBy(*ROLLUP_KEYS))
    runs_to = runs.select("run_id", representative.alias("representative"))
    return (
        histogram.join(F.broadcast(runs_to), "run_id")
        .groupBy("representative", "metric", "latency_ms")
        .agg(F.sum("count").alias("count"))
        .select(F.col("representative").alias("run_id"), "metric", "latency_ms", "count")
    )


def histogram_percentiles(
    histogram: DataFrame, keys: Sequence[str], *, counted: Sequence[str] = ()
) -> DataFrame:
    """Per `keys`: `ack_p50_ms` … `receive_p99_ms` from histogram rows that carry the keys,
    and for each metric in `counted` its total count as a column of that name (0 if none):
    one pass over the histogram for both."""
    counts = histogram.groupBy(*keys, "metric", "latency_ms").agg(F.sum("count").alias("count"))
    group = Window.partitionBy(*keys, "metric")
    running = group.orderBy("latency_ms").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    cumulative = counts.withColumns(
        {"below": F.sum("count").over(running), "total": F.sum("count").over(group)}
    )
    per_metric = cumulative.groupBy(*keys, "metric").agg(
        *[
            F.min(F.when(F.col("below") * 100 >= F.col("total") * p, F.col("latency_ms"))).alias(
                f"p{p}"
            )
            for p in PERCENTILES
        ],
        F.max("total").alias("total"),
    )
    wide = (
        per_metric.groupBy(*keys)
        .pivot("metric", [*METRICS, *counted])
        .agg(*[F.first(f"p{p}").alias(f"p{p}") for p in PERCENTILES], F.first("total").alias("n"))
    )
    return wide.select(
        *keys,
        *[F.col(f"{m}_p{p}").alias(f"{m}_p{p}_ms") for m in METRICS for p in PERCENTILES],
        *[F.coalesce(F.col(f"{m}_n"), F.lit(0)).alias(m) for m in counted],
    )
