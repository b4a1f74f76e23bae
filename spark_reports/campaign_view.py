"""The campaign view: per scenario × target × backend × mode, how often a run held and how sure
that is, what broke, how long failovers took, and the same per night.

Input is `campaign_runs.CAMPAIGN_RUNS`. A *run* here is a judged fresh run: no `problem`, a
verdict (any string), not a replay. Every transform is a pure DataFrame → DataFrame:

    campaign_table       runs, held, held % with its 95 % Wilson interval, the other outcomes,
                         interrupted / unreadable / replay counts, failover p50 / p90 / max
    violations_by_kind   per group and violation kind: runs showing it, share of the runs
    failover_histogram   per group and bucket (`FAILOVER_BUCKETS`, and `never`): faults
    nights_table         per group and night: runs, held, held % and its interval, campaigns
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_reports.wilson import Z_95

__all__ = [
    "FAILOVER_BUCKETS",
    "KEY",
    "NEVER",
    "campaign_table",
    "failover_histogram",
    "nights_table",
    "violations_by_kind",
    "wilson_pct",
]

KEY = ("scenario", "target", "backend", "mode")
UNKNOWN = "(unknown)"
UNDATED = "(undated)"
NEVER = "never"
FAILOVER_BUCKETS: tuple[tuple[float | None, str], ...] = (
    (0.5, "< 0.5 s"),
    (1.0, "0.5–1 s"),
    (2.0, "1–2 s"),
    (5.0, "2–5 s"),
    (10.0, "5–10 s"),
    (30.0, "10–30 s"),
    (None, "≥ 30 s"),
)
"""Upper bounds (exclusive) and labels of the failover histogram's buckets, in order; a
fault never followed by an acknowledged send falls in `NEVER`."""


def _keyed(runs: DataFrame) -> DataFrame:
    """Group keys never null (a run whose spec could not be read: `(unknown)`), and flags."""
    return runs.withColumns(
        {
            **{k: F.coalesce(F.col(k), F.lit(UNKNOWN)) for k in KEY},
            "judged": F.col("problem").isNull()
            & F.col("outcome").isNotNull()
            & ~F.coalesce(F.col("replay"), F.lit(False)),
        }
    )


def wilson_pct(held: Column, runs: Column, z: float = Z_95) -> tuple[Column, Column]:
    """The Wilson score interval of held / runs, in percent (null without a run); the same
    formula as `wilson.wilson_interval`."""
    n = runs.cast("double")
    p = held.cast("double") / n
    z2 = z * z
    denominator = F.lit(1.0) + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z / denominator * F.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    low = F.when(runs > 0, F.greatest(F.lit(0.0), centre - half) * 100)
    high = F.when(runs > 0, F.least(F.lit(1.0), centre + half) * 100)
    return F.round(low, 2), F.round(high, 2)


def _held_columns() -> list[Column]:
    low, high = wilson_pct(F.col("held"), F.col("runs"))
    return [
        F.when(F.col("runs") > 0, F.round(F.col("held") / F.col("runs") * 100, 2)).alias(
            "held_pct"
        ),
        low.alias("held_ci_low_pct"),
        high.alias("held_ci_high_pct"),
    ]


def _outcomes(runs: DataFrame) -> DataFrame:
    """Per group, the judged runs' outcomes other than held, as `["broken 3", "unknown 1"]`."""
    counted = (
        runs.where(F.col("judged") & (F.col("outcome") != "held")).groupBy(*KEY, "outcome").count()
    )
    return counted.groupBy(*KEY).agg(
        F.sort_array(
            F.collect_list(F.concat_ws(" ", "outcome", F.col("count").cast("string")))
        ).alias("other_outcomes")
    )


def campaign_table(runs: DataFrame) -> DataFrame:
    """One row per group: run counts, held rate and interval, failover distribution.

    Failover figures are over every fault of the group's runs (exact percentiles, linear
    interpolation); a fault never followed by an acknowledged send counts in
    `failovers_never`, not in the percentiles.
    """
    keyed = _keyed(runs)
    exploded = keyed.select(
        "*", F.posexplode_outer("failover_s").alias("fault_pos", "failover")
    ).withColumn("first", F.coalesce(F.col("fault_pos"), F.lit(0)) == 0)
    first, judged = F.col("first"), F.col("judged")
    failover = F.when(judged, F.col("failover"))
    grouped = exploded.groupBy(*KEY).agg(
        F.count(F.when(first & judged, True)).alias("runs"),
        F.count(F.when(first & judged & (F.col("outcome") == "held"), True)).alias("held"),
        F.count(F.when(first & F.col("interrupted"), True)).alias("interrupted"),
        F.count(F.when(first & F.col("problem").isNotNull() & ~F.col("interrupted"), True)).alias(
            "unreadable"
        ),
        F.count(F.when(first & F.col("problem").isNull() & F.col("replay"), True)).alias("replays"),
        F.count(F.when(first & judged & (F.size("violations") > 0), True)).alias("violating_runs"),
        F.count(failover).alias("failovers"),
        F.count(
            F.when(judged & F.col("fault_pos").isNotNull() & F.col("failover").isNull(), True)
        ).alias("failovers_never"),
        F.percentile(failover, [0.5, 0.9]).alias("failover_pcts"),
        F.max(failover).alias("failover_max"),
    )
    return grouped.join(_outcomes(keyed), list(KEY), "left").select(
        *KEY,
        "runs",
        "held",
        *_held_columns(),
        F.coalesce(F.col("other_outcomes"), F.array().cast("array<string>")).alias(
            "other_outcomes"
        ),
        "violating_runs",
        "interrupted",
        "unreadable",
        "replays",
        "failovers",
        "failovers_never",
        F.round(F.col("failover_pcts")[0], 3).alias("failover_p50_s"),
        F.round(F.col("failover_pcts")[1], 3).alias("failover_p90_s"),
        F.round("failover_max", 3).alias("failover_max_s"),
    )


def violations_by_kind(runs: DataFrame) -> DataFrame:
    """Per group and violation kind: the judged runs that showed it, and their share."""
    keyed = _keyed(runs).withColumn(
        "group_runs", F.count(F.when(F.col("judged"), True)).over(Window.partitionBy(*KEY))
    )
    kinds = keyed.where(F.col("judged")).select(
        *KEY, "group_runs", F.explode(F.array_distinct("violations")).alias("kind")
    )
    counted = kinds.groupBy(*KEY, "kind", "group_runs").agg(F.count(F.lit(1)).alias("runs"))
    return counted.select(
        *KEY,
        "kind",
        "runs",
        F.round(F.col("runs") / F.col("group_runs") * 100, 2).alias("share_pct"),
    )


def _bucket(seconds: Column) -> tuple[Column, Column]:
    """(order, label) of `seconds` in `FAILOVER_BUCKETS`; `NEVER` (last) for null."""
    order: Column = F.lit(len(FAILOVER_BUCKETS))
    label: Column = F.lit(NEVER)
    for number, (upper, name) in reversed(list(enumerate(FAILOVER_BUCKETS))):
        inside = seconds.isNotNull() if upper is None else seconds < upper
        order = F.when(inside, F.lit(number)).otherwise(order)
        label = F.when(inside, F.lit(name)).otherwise(label)
    return order, label


def failover_histogram(runs: DataFrame) -> DataFrame:
    """Per group and bucket with at least one fault: `bucket_order`, `bucket`, `faults`."""
    faults = (
        _keyed(runs).where(F.col("judged")).select(*KEY, F.explode("failover_s").alias("failover"))
    )
    order, label = _bucket(F.col("failover"))
    return (
        faults.select(*KEY, order.alias("bucket_order"), label.alias("bucket"))
        .groupBy(*KEY, "bucket_order", "bucket")
        .agg(F.count(F.lit(1)).alias("faults"))
    )


def nights_table(runs: DataFrame) -> DataFrame:
    """Per group and night (`(undated)` without one): the held rate, its interval, campaigns."""
    keyed = _keyed(runs).withColumn("night", F.coalesce(F.col("night"), F.lit(UNDATED)))
    judged = F.col("judged")
    grouped = keyed.groupBy(*KEY, "night").agg(
        F.count(F.when(judged, True)).alias("runs"),
        F.count(F.when(judged & (F.col("outcome") == "held"), True)).alias("held"),
        F.count(F.when(F.col("interrupted"), True)).alias("interrupted"),
        F.count(F.when(F.col("problem").isNotNull() & ~F.col("interrupted"), True)).alias(
            "unreadable"
        ),
        F.sort_array(F.collect_set("campaign")).alias("campaigns"),
    )
    return grouped.select(
        *KEY,
        "night",
        "runs",
        "held",
        *_held_columns(),
        "interrupted",
        "unreadable",
        "campaigns",
    )
