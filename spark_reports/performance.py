"""Performance: throughput from results, latency from histories, laid out like the seeds' table.

`performance_table` gives one row per scenario × target × backend × config × clients;
`change_vs_baseline` adds each config's throughput change against the single node ("No HA")
for the same client count, the seeds' "difference in %"; `performance_pivot` lays a figure
out as the seeds do: a row per client count, a column per configuration.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_reports.latency import histogram_percentiles

__all__ = [
    "PERF_GROUP",
    "change_vs_baseline",
    "labelled_histogram",
    "performance_pivot",
    "performance_table",
]

PERF_GROUP = ("scenario", "target", "backend", "config", "config_order", "producers", "consumers")


def labelled_histogram(histogram: DataFrame, runs: DataFrame, columns: Sequence[str]) -> DataFrame:
    """The histogram of readable runs summed per `columns` (the runs' values), metric and
    latency: (*columns, metric, latency_ms, count).

    Histograms are many (a few thousand rows per run) and groups few, so each group gets a
    small number first (on the runs frame) and the histogram rows are summed by that number;
    the group's columns are put back on the sums.
    """
    readable = runs.where(F.col("problem").isNull()).select("run_id", *columns)
    numbered = readable.withColumn("group", F.dense_rank().over(Window.orderBy(*columns)))
    groups = numbered.select("group", *columns).distinct()
    sums = (
        histogram.join(F.broadcast(numbered.select("run_id", "group")), "run_id")
        .groupBy("group", "metric", "latency_ms")
        .agg(F.sum("count").alias("count"))
    )
    return sums.join(F.broadcast(groups), "group").select(*columns, "metric", "latency_ms", "count")


def performance_table(runs: DataFrame, histogram: DataFrame) -> DataFrame:
    """Throughput (mean over runs) and latency percentiles per config and client count.

    `runs` is labelled (`labels.with_labels`); `histogram` is `latency.latency_histogram`.
    Throughput is acknowledged messages per second, and the same in KiB/s by message size.
    """
    readable = runs.where(F.col("problem").isNull())
    throughput = readable.groupBy(*PERF_GROUP).agg(
        F.count("*").alias("runs"),
        F.round(F.avg("acknowledged_per_s"), 1).alias("throughput_msgs_s"),
        F.round(F.avg(F.col("acknowledged_per_s") * F.col("size") / 1024), 1).alias(
            "throughput_kib_s"
        ),
    )
    # One pass over the histograms: the sums per group and latency feed both the
    # percentiles and the count of unmatched acknowledgements.
    counts = labelled_histogram(histogram, runs, PERF_GROUP)
    latency = histogram_percentiles(counts, PERF_GROUP, counted=("ack_unmatched",))
    return throughput.join(latency, list(PERF_GROUP), "left").select(
        *PERF_GROUP,
        F.concat_ws("/", "producers", "consumers").alias("clients"),
        "runs",
        "throughput_msgs_s",
        "throughput_kib_s",
        *[c for c in latency.columns if c.endswith("_ms")],
        F.coalesce("ack_unmatched", F.lit(0)).alias("ack_unmatched"),
    )


def change_vs_baseline(performance: DataFrame) -> DataFrame:
    """Add `change_pct`: throughput against "No HA" at the same scenario and client count."""
    same = Window.partitionBy("scenario", "target", "backend", "producers", "consumers")
    baseline = F.max(F.when(F.col("config") == "No HA", F.col("throughput_msgs_s"))).over(same)
    change = F.when(baseline > 0, F.round((F.col("throughput_msgs_s") / baseline - 1) * 100, 2))
    return performance.withColumn("change_pct", change)


def performance_pivot(performance: DataFrame, value: str, configs: Sequence[str]) -> DataFrame:
    """The seeds' layout: a row per client count, a column per config (in `configs` order)."""
    return (
        performance.groupBy("scenario", "target", "backend", "producers", "consumers", "clients")
        .pivot("config", list(configs))
        .agg(F.first(value))
        .orderBy("scenario", "target", "backend", "producers", "consumers")
        .drop("producers", "consumers")
    )
