"""Reliability: per scenario × target × backend × nodes × durability, what held and what broke.

Input is a labelled runs frame (`labels.with_labels`); a run with a `problem` counts only as
`unreadable`, never in the verdicts or figures.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = ["GROUP", "broken_runs", "reliability_table", "unreadable_runs"]

GROUP = ("scenario", "target", "backend", "nodes", "durability")


def reliability_table(runs: DataFrame) -> DataFrame:
    """One row per group: verdict counts, message counts, unavailability, failover percentiles.

    Failover percentiles are exact (linear interpolation) over every fault's `failover_s` of
    the group's readable runs; a fault never followed by an acknowledged send counts in
    `failovers_never`. Availability is 1 − Σ unavailable / Σ workload seconds, in percent.
    """
    exploded = runs.select(
        "*", F.posexplode_outer("failover_s").alias("fault_pos", "failover")
    ).withColumns(
        {
            "readable": F.col("problem").isNull(),
            "first": F.coalesce(F.col("fault_pos"), F.lit(0)) == 0,
        }
    )
    ok = F.col("readable") & F.col("first")

    failover = F.when(F.col("readable"), F.col("failover"))
    grouped = exploded.groupBy(*GROUP).agg(
        F.count(F.when(ok, True)).alias("runs"),
        F.count(F.when(ok & (F.col("verdict") == "held"), True)).alias("held"),
        F.count(F.when(ok & (F.col("verdict") == "broken"), True)).alias("broken"),
        F.count(F.when(ok & (F.col("verdict") == "unknown"), True)).alias("unknown"),
        F.count(F.when(ok & (F.col("verdict") == "deviation"), True)).alias("deviation"),
        F.count(F.when(~F.col("readable") & F.col("first"), True)).alias("unreadable"),
        F.coalesce(F.sum(F.when(ok, F.col("lost"))), F.lit(0)).alias("acknowledged_lost"),
        F.coalesce(F.sum(F.when(ok, F.col("duplicated"))), F.lit(0)).alias("duplicated"),
        F.coalesce(F.sum(F.when(ok, F.col("resurrected"))), F.lit(0)).alias("resurrected"),
        F.coalesce(F.sum(F.when(ok, F.col("unexpected"))), F.lit(0)).alias("unexpected"),
        F.sum(F.when(ok, F.col("unavailable_total_s"))).alias("unavailable_total_s"),
        F.max(F.when(ok, F.col("unavailable_longest_s"))).alias("unavailable_longest_s"),
        F.sum(F.when(ok, F.col("workload_s"))).alias("workload_s"),
        F.count(failover).alias("failovers"),
        F.count(
            F.when(
                F.col("readable") & F.col("fault_pos").isNotNull() & F.col("failover").isNull(),
                True,
            )
        ).alias("failovers_never"),
        F.percentile(failover, [0.5, 0.95, 0.99]).alias("failover_pcts"),
        F.count(F.when(ok & F.col("two_masters_seen"), True)).alias("two_masters_runs"),
    )
    availability = F.when(
        F.col("workload_s") > 0,
        F.round((1 - F.col("unavailable_total_s") / F.col("workload_s")) * 100, 3),
    )
    return grouped.select(
        *GROUP,
        "runs",
        "held",
        "broken",
        "unknown",
        "deviation",
        "unreadable",
        "acknowledged_lost",
        "duplicated",
        "resurrected",
        "unexpected",
        F.round("unavailable_total_s", 3).alias("unavailable_total_s"),
        F.round("unavailable_longest_s", 3).alias("unavailable_longest_s"),
        availability.alias("availability_pct"),
        "failovers",
        "failovers_never",
        F.round(F.col("failover_pcts")[0], 3).alias("failover_p50_s"),
        F.round(F.col("failover_pcts")[1], 3).alias("failover_p95_s"),
        F.round(F.col("failover_pcts")[2], 3).alias("failover_p99_s"),
        "two_masters_runs",
    )


def broken_runs(runs: DataFrame) -> DataFrame:
    """Every readable run whose verdict is broken, with its folder and reproduce command."""
    return runs.where(F.col("problem").isNull() & (F.col("verdict") == "broken")).select(
        "run_id",
        "folder",
        "scenario",
        "seed",
        "target",
        "backend",
        "nodes",
        "durability",
        F.array_join("reasons", "; ").alias("reasons"),
        "lost",
        "reproduce",
    )


def unreadable_runs(runs: DataFrame) -> DataFrame:
    """Every run folder that could not be read, with what is wrong with it."""
    return runs.where(F.col("problem").isNotNull()).select("run_id", "folder", "problem")
