"""Trends: the reliability and latency figures per period, and the regressions between periods.

A period is a UTC day (from the run folder's stamp) or a lab git revision (ordered by its
first run). A regression is flagged for a configuration when, from one period it has runs
in to the next:

    verdict      it held (no broken run) and now breaks
    ack p99      the send→ack p99 grew by more than `factor`
    failover p99 the failover p99 grew by more than `factor`
"""

from __future__ import annotations

from typing import Literal

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_reports.latency import histogram_percentiles
from spark_reports.performance import labelled_histogram

__all__ = ["TREND_KEY", "TrendBy", "regressions", "trend_table", "with_period"]

TREND_KEY = ("scenario", "target", "backend", "nodes", "durability", "producers", "consumers")
TrendBy = Literal["day", "revision"]


def with_period(runs: DataFrame, by: TrendBy) -> DataFrame:
    """Add `period` (the day or the revision, "unknown" if absent) and `period_start`."""
    period = F.col("date") if by == "day" else F.col("git_revision")
    stamped = runs.withColumn("period", F.coalesce(period, F.lit("unknown")))
    first = F.min(F.coalesce(F.col("stamp"), F.lit("99999999T999999Z"))).over(
        Window.partitionBy("period")
    )
    return stamped.withColumn("period_start", first)


def _verdict(held: Column, broken: Column) -> Column:
    return F.when(broken > 0, "broken").when(held > 0, "held").otherwise("unknown")


def trend_table(runs: DataFrame, histogram: DataFrame) -> DataFrame:
    """Per configuration and period: verdicts, availability, failover and latency p99.

    `runs` is labelled and has a period (`with_period`); `histogram` is
    `latency.latency_histogram`.
    """
    keys = [*TREND_KEY, "period", "period_start"]
    readable = F.col("problem").isNull()
    exploded = runs.select("*", F.posexplode_outer("failover_s").alias("fault_pos", "failover"))
    first = F.coalesce(F.col("fault_pos"), F.lit(0)) == 0
    ok = readable & first
    figures = exploded.groupBy(*keys).agg(
        F.count(F.when(ok, True)).alias("runs"),
        F.count(F.when(ok & (F.col("verdict") == "held"), True)).alias("held"),
        F.count(F.when(ok & (F.col("verdict") == "broken"), True)).alias("broken"),
        F.count(F.when(ok & (F.col("verdict") == "unknown"), True)).alias("unknown"),
        F.count(F.when(~readable & first, True)).alias("unreadable"),
        F.sum(F.when(ok, F.col("unavailable_total_s"))).alias("unavailable_s"),
        F.sum(F.when(ok, F.col("workload_s"))).alias("workload_s"),
        F.percentile(F.when(readable, F.col("failover")), 0.99).alias("failover_p99"),
        F.avg(F.when(ok, F.col("acknowledged_per_s"))).alias("throughput"),
    )
    latency = histogram_percentiles(labelled_histogram(histogram, runs, keys), keys)
    availability = F.when(
        F.col("workload_s") > 0,
        F.round((1 - F.col("unavailable_s") / F.col("workload_s")) * 100, 3),
    )
    return figures.join(latency, keys, "left").select(
        *keys,
        "runs",
        "held",
        "broken",
        "unknown",
        "unreadable",
        _verdict(F.col("held"), F.col("broken")).alias("verdict"),
        availability.alias("availability_pct"),
        F.round("failover_p99", 3).alias("failover_p99_s"),
        F.round("throughput", 1).alias("throughput_msgs_s"),
        "ack_p99_ms",
        "receive_p99_ms",
    )


def regressions(trend: DataFrame, factor: float) -> DataFrame:
    """One row per regression: the configuration, both periods, what grew or flipped."""
    order = Window.partitionBy(*TREND_KEY).orderBy("period_start", "period")
    readable = trend.where(F.col("runs") > 0)
    paired = readable.select(
        "*",
        *[
            F.lag(c).over(order).alias(f"prev_{c}")
            for c in ("period", "verdict", "ack_p99_ms", "failover_p99_s")
        ],
    ).where(F.col("prev_period").isNotNull())

    def grew(column: str) -> Column:
        before = F.col(f"prev_{column}")
        return before.isNotNull() & (before > 0) & (F.col(column) > before * factor)

    def shown(column: str) -> Column:
        return F.col(column).cast("string")

    checks = [
        (
            "verdict held → broken",
            (F.col("prev_verdict") == "held") & (F.col("verdict") == "broken"),
            F.col("prev_verdict"),
            F.col("verdict"),
        ),
        (
            f"send→ack p99 grew over {factor:g}×",
            grew("ack_p99_ms"),
            shown("prev_ack_p99_ms"),
            shown("ack_p99_ms"),
        ),
        (
            f"failover p99 grew over {factor:g}×",
            grew("failover_p99_s"),
            shown("prev_failover_p99_s"),
            shown("failover_p99_s"),
        ),
    ]
    found = [
        paired.where(condition).select(
            *TREND_KEY,
            F.col("prev_period").alias("period_before"),
            "period",
            F.lit(name).alias("regression"),
            before.alias("before"),
            after.alias("after"),
        )
        for name, condition, before, after in checks
    ]
    union = found[0]
    for frame in found[1:]:
        union = union.unionByName(frame)
    return union
