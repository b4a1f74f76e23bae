"""What broke, and what of it is new: pure transforms of the campaign runs frame
(`campaign_runs.CAMPAIGN_RUNS`).

    failing_runs(runs)             every judged run that did not hold (fresh runs and replays
                                   of recorded failures), with its violation kinds, what the
                                   failure database said of it (`known`) and the command
                                   that reproduces it
    failure_kinds(failing)         per violation kind: runs, cells, new ones, replays
    new_since(failing, previous)   per cell and violation kind shown now that the previous
                                   report's failing runs did not show: the runs showing it

A run with no violation kind recorded (an `unknown` verdict, say) counts under `NO_KIND`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_reports.campaign_view import KEY

__all__ = ["FAILING_COLUMNS", "NO_KIND", "failing_runs", "failure_kinds", "new_since"]

NO_KIND = "(no kind recorded)"
FAILING_COLUMNS = (
    *KEY,
    "run_id",
    "outcome",
    "violations",
    "seed",
    "known",
    "failure",
    "campaign",
    "reproduce",
    "folder",
)
"""The failing runs table's columns; the previous report's copy is read by these names."""


def failing_runs(runs: DataFrame) -> DataFrame:
    """Every readable run with a verdict other than held (interrupted runs have none)."""
    keyed = runs.withColumns({k: F.coalesce(F.col(k), F.lit("(unknown)")) for k in KEY})
    failing = keyed.where(
        F.col("problem").isNull() & F.col("outcome").isNotNull() & (F.col("outcome") != "held")
    )
    return failing.withColumn(
        "violations",
        F.when(F.size("violations") > 0, F.col("violations")).otherwise(F.array(F.lit(NO_KIND))),
    ).select(*FAILING_COLUMNS)


def _kinds(failing: DataFrame) -> DataFrame:
    return failing.select("*", F.explode(F.array_distinct("violations")).alias("kind"))


def failure_kinds(failing: DataFrame) -> DataFrame:
    """Per violation kind: fresh runs showing it, distinct cells, runs whose failure the
    failure database had not seen before (`new_runs`), and replays still showing it."""
    kinds = _kinds(failing)
    replay = F.coalesce(F.col("known"), F.lit("")) == "replay"
    return kinds.groupBy("kind").agg(
        F.count(F.when(~replay, True)).alias("runs"),
        F.countDistinct(F.concat_ws("\u0000", *KEY)).alias("cells"),
        F.count(F.when(F.col("known") == "new", True)).alias("new_runs"),
        F.count(F.when(replay, True)).alias("replays"),
    )


def new_since(failing: DataFrame, previous: DataFrame) -> DataFrame:
    """Per cell and violation kind that `failing` shows and `previous` (the previous report's
    failing runs) does not: the runs showing it now."""
    before = _kinds(previous).select(*KEY, "kind").distinct()
    now = _kinds(failing).groupBy(*KEY, "kind").agg(F.count(F.lit(1)).alias("runs"))
    return now.join(before, [*KEY, "kind"], "left_anti")
