"""The campaign view's and the summary's transforms on tiny frames: the cells' held rate and
interval, violations, failover buckets and nights; what broke and what is new."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from spark_reports.campaign_runs import CampaignRun, campaign_runs_frame
from spark_reports.campaign_view import (
    NEVER,
    campaign_table,
    failover_histogram,
    nights_table,
    violations_by_kind,
)
from spark_reports.failures_view import NO_KIND, failing_runs, failure_kinds, new_since
from spark_reports.wilson import wilson_interval


@pytest.mark.spark
def test_campaign_transforms_on_a_tiny_frame(spark: SparkSession) -> None:
    def run(number: int, **fields: Any) -> CampaignRun:
        base = CampaignRun(f"s/{number}", f"/r/{number}", "s", "t", "b", "m", "2026-01-05")
        return replace(base, **{"outcome": "held", **fields})

    records = [
        run(1, failover_s=(0.5, None)),
        run(2, failover_s=(0.49,)),
        run(3, outcome="deviation", violations=("x",), failover_s=(31.0,)),
        run(4, outcome="broken", violations=("lost", "x"), night="2026-01-06"),
        run(5, outcome=None, interrupted=True, problem="run was interrupted"),
        run(6, outcome=None, problem="no result.json"),
        run(7, outcome="broken", replay=True, violations=("lost",)),
        run(8, target=None, night=None),
    ]
    runs = campaign_runs_frame(spark, records)
    (row, unknown) = sorted(campaign_table(runs).collect(), key=lambda r: r["target"] != "t")
    assert (row["runs"], row["held"], row["other_outcomes"]) == (
        4,
        2,
        ["broken 1", "deviation 1"],
    )
    assert (row["interrupted"], row["unreadable"], row["replays"]) == (1, 1, 1)
    interval = wilson_interval(2, 4)
    assert interval is not None
    assert row["held_ci_low_pct"] == pytest.approx(100 * interval[0], abs=0.005)
    assert row["held_ci_high_pct"] == pytest.approx(100 * interval[1], abs=0.005)
    assert (row["failovers"], row["failovers_never"], row["failover_max_s"]) == (3, 1, 31.0)
    assert row["failover_p50_s"] == pytest.approx(0.5)
    assert (unknown["target"], unknown["runs"], unknown["held"]) == ("(unknown)", 1, 1)

    kinds = {
        (r["target"], r["kind"]): (r["runs"], r["share_pct"])
        for r in violations_by_kind(runs).collect()
    }
    assert kinds == {("t", "x"): (2, 50.0), ("t", "lost"): (1, 25.0)}
    buckets = {r["bucket"]: r["faults"] for r in failover_histogram(runs).collect()}
    assert buckets == {"< 0.5 s": 1, "0.5–1 s": 1, "≥ 30 s": 1, NEVER: 1}
    nights = {
        (r["target"], r["night"]): (r["runs"], r["held"]) for r in nights_table(runs).collect()
    }
    assert nights == {
        ("t", "2026-01-05"): (3, 2),
        ("t", "2026-01-06"): (1, 0),
        ("(unknown)", "(undated)"): (1, 1),
    }


@pytest.mark.spark
def test_what_broke_and_what_is_new_on_a_tiny_frame(spark: SparkSession) -> None:
    def run(number: int, cell: str = "s", **fields: Any) -> CampaignRun:
        base = CampaignRun(f"{cell}/{number}", f"/r/{number}", cell, "t", "b", "m", "2026-01-05")
        return replace(base, **{"outcome": "held", "seed": number, **fields})

    runs = campaign_runs_frame(
        spark,
        [
            run(1),
            run(2, outcome="broken", violations=("lost", "two-masters"), known="new"),
            run(3, outcome="unknown", known="recorded"),
            run(4, "s2", outcome="broken", violations=("lost",), known="replay", replay=True),
            run(5, outcome=None, interrupted=True, problem="run was interrupted"),
            run(6, outcome="broken", problem="no result.json"),
        ],
    )
    failing = failing_runs(runs)
    expected = spark.createDataFrame(
        [
            ("s", "t", "b", "m", "s/2", "broken", ["lost", "two-masters"], 2, "new"),
            ("s", "t", "b", "m", "s/3", "unknown", [NO_KIND], 3, "recorded"),
            ("s2", "t", "b", "m", "s2/4", "broken", ["lost"], 4, "replay"),
        ],
        "scenario string, target string, backend string, mode string, run_id string, "
        "outcome string, violations array<string>, seed long, known string",
    )
    assertDataFrameEqual(failing.select(*expected.columns), expected)
    kinds = spark.createDataFrame(
        [("lost", 1, 2, 1, 1), ("two-masters", 1, 1, 1, 0), (NO_KIND, 1, 1, 0, 0)],
        "kind string, runs long, cells long, new_runs long, replays long",
    )
    assertDataFrameEqual(failure_kinds(failing), kinds)
    previous = failing.where(F.col("run_id") == "s2/4")  # last night: lost in s2 only
    news = spark.createDataFrame(
        [("s", "t", "b", "m", "lost", 1), ("s", "t", "b", "m", "two-masters", 1),
         ("s", "t", "b", "m", NO_KIND, 1)],
        "scenario string, target string, backend string, mode string, kind string, runs long",
    )  # fmt: skip
    assertDataFrameEqual(new_since(failing, previous), news)
    assert new_since(failing, failing).count() == 0
