"""spark_reports' reliability side on tiny hand-made frames: labels, verdicts, trend."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual
from spark_helpers import labelled, run, unreadable

from spark_reports.reliability import broken_runs, reliability_table, unreadable_runs
from spark_reports.trend import regressions, trend_table, with_period

# --- transformations ------------------------------------------------------------------------


@pytest.mark.spark
def test_labels(spark: SparkSession) -> None:
    runs = labelled(
        spark,
        run("a"),
        run("b", nodes=1, master_sync="NO_SYNC", replica_sync="NO_SYNC", coalescing_sync=True),
        run("c", nodes=3, producers=8, consumers=4, coalescing_sync=True),
        unreadable("d", "no spec.json"),
    )
    expected = spark.createDataFrame(
        [
            ("a", "SYNC,SYNC,ALL", "SYNC,SYNC,ALL", 2000, "1/1"),
            ("b", "NO_SYNC,NO_SYNC,ALL - coalescing-sync", "No HA", 0, "1/1"),
            (
                "c",
                "SYNC,SYNC,ALL - coalescing-sync",
                "SYNC,SYNC,ALL - coalescing-sync (3 nodes)",
                3100,
                "8/4",
            ),
            ("d", None, None, None, None),
        ],
        "run_id string, durability string, config string, config_order int, clients string",
    )
    actual = runs.select("run_id", "durability", "config", "config_order", "clients")
    assertDataFrameEqual(actual, expected)


@pytest.mark.spark
def test_reliability_table(spark: SparkSession) -> None:
    runs = labelled(
        spark,
        run("r1", duplicated=2, unavailable_total_s=1.0, unavailable_longest_s=1.0,
            failover_s=(1.0,)),
        run("r2", verdict="broken", lost=3, unavailable_total_s=3.0, unavailable_longest_s=2.0,
            failover_s=(2.0, None), two_masters_seen=True),
        run("r3", duplicated=1, workload_s=20.0, failover_s=(4.0,)),
        unreadable("r4", "no result.json", target="t", backend="b", nodes=2,
                   master_sync="SYNC", replica_sync="SYNC", ack_policy="ALL",
                   coalescing_sync=False),
        run("r5", nodes=1, verdict="unknown", workload_s=0.0),
        run("r6", nodes=1, verdict="deviation", workload_s=0.0),  # a declared deviation
    )  # fmt: skip
    # Group SYNC,SYNC,ALL on 2 nodes: r1-r3 readable, r4 not. Unavailable 1+3+0 = 4 s of
    # 10+10+20 = 40 s: 90 %. Failovers 1, 2, 4 (one never): p50 2; p95 at rank 1.9 is
    # 2 + 0.9 × 2 = 3.8; p99 at rank 1.98 is 3.96.
    expected = spark.createDataFrame(
        [
            (
                "s",
                "t",
                "b",
                2,
                "SYNC,SYNC,ALL",
                3,
                2,
                1,
                0,
                0,
                1,
                3,
                3,
                0,
                0,
                4.0,
                2.0,
                90.0,
                3,
                1,
                2.0,
                3.8,
                3.96,
                1,
            ),
            (
                "s",
                "t",
                "b",
                1,
                "SYNC,SYNC,ALL",
                2,
                0,
                0,
                1,
                1,
                0,
                0,
                0,
                0,
                0,
                0.0,
                0.0,
                None,
                0,
                0,
                None,
                None,
                None,
                0,
            ),
        ],
        "scenario string, target string, backend string, nodes int, durability string, "
        "runs long, held long, broken long, unknown long, deviation long, unreadable long, "
        "acknowledged_lost long, duplicated long, resurrected long, unexpected long, "
        "unavailable_total_s double, unavailable_longest_s double, availability_pct double, "
        "failovers long, failovers_never long, failover_p50_s double, failover_p95_s double, "
        "failover_p99_s double, two_masters_runs long",
    )
    assertDataFrameEqual(reliability_table(runs), expected)


@pytest.mark.spark
def test_broken_and_unreadable_runs(spark: SparkSession) -> None:
    runs = labelled(
        spark,
        run("ok"),
        run("bad", verdict="broken", lost=2, reasons=("2 lost", "two masters")),
        unreadable("torn", "torn last line in history.jsonl"),
    )
    assertDataFrameEqual(
        broken_runs(runs).select("run_id", "folder", "reasons", "lost", "reproduce"),
        spark.createDataFrame(
            [("bad", "/runs/bad", "2 lost; two masters", 2, "lab replay bad")],
            "run_id string, folder string, reasons string, lost long, reproduce string",
        ),
    )
    assertDataFrameEqual(
        unreadable_runs(runs),
        spark.createDataFrame(
            [("torn", "/runs/torn", "torn last line in history.jsonl")],
            "run_id string, folder string, problem string",
        ),
    )


@pytest.mark.spark
def test_trend_and_regressions(spark: SparkSession) -> None:
    day = {"date": "2026-01-06", "stamp": "20260106T000000Z", "git_revision": "rev2"}
    runs = with_period(
        labelled(
            spark,
            run("d1", failover_s=(1.0,)),
            run("d2", verdict="broken", failover_s=(2.0,), **day),
            unreadable("d3", "no spec.json", date="2026-01-06", stamp="20260106T010000Z"),
        ),
        "day",
    )
    histogram = spark.createDataFrame(
        [("d1", "ack", 10.0, 1), ("d2", "ack", 12.0, 1)],
        "run_id string, metric string, latency_ms double, count long",
    )
    trend = trend_table(runs, histogram)
    expected_trend = spark.createDataFrame(
        [
            ("2026-01-05", 1, 1, 0, "held", 1.0, 10.0),
            ("2026-01-06", 1, 0, 1, "broken", 2.0, 12.0),
        ],
        "period string, runs long, held long, broken long, verdict string, "
        "failover_p99_s double, ack_p99_ms double",
    )
    assertDataFrameEqual(
        trend.where(F.col("durability").isNotNull()).select(*expected_trend.columns),
        expected_trend,
    )
    # Held → broken, and failover 1.0 → 2.0 is over 1.5×; ack 10 → 12 ms is not.
    expected = spark.createDataFrame(
        [
            ("2026-01-05", "2026-01-06", "verdict held → broken", "held", "broken"),
            ("2026-01-05", "2026-01-06", "failover p99 grew over 1.5×", "1.0", "2.0"),
        ],
        "period_before string, period string, regression string, before string, after string",
    )
    actual = regressions(trend, 1.5).select(*expected.columns)
    assertDataFrameEqual(actual, expected)
    assert regressions(trend, 1.1).where(F.col("regression").startswith("send")).count() == 1
