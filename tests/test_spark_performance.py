"""spark_reports' performance side on tiny hand-made frames: latencies, histograms, tables."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual
from spark_helpers import HISTORY_DDL, labelled, run, unreadable

from spark_reports.latency import (
    histogram_percentiles,
    latency_histogram,
    message_latencies,
    significant,
)
from spark_reports.performance import change_vs_baseline, performance_pivot, performance_table

MS = 1_000_000  # nanoseconds


@pytest.mark.spark
def test_message_latencies(spark: SparkSession) -> None:
    history = spark.createDataFrame(
        [
            # v1: invoke 1 ms, ok 3 ms, received 4.5 ms: ack 2 ms, receive 3.5 ms
            ("r/1", 1 * MS, "p0", "invoke", "send", "v1"),
            ("r/1", 3 * MS, "p0", "ok", "send", "v1"),
            ("r/1", 4_500_000, "c0", "ok", "receive", "v1"),
            # v2: retried; the ok answers the second invoke (2 ms → 2.5 ms), two receives
            ("r/1", 0, "p1", "invoke", "send", "v2"),
            ("r/1", 1 * MS, "p1", "info", "send", "v2"),
            ("r/1", 2 * MS, "p1", "invoke", "send", "v2"),
            ("r/1", 2_500_000, "p1", "ok", "send", "v2"),
            ("r/1", 6 * MS, "c0", "ok", "receive", "v2"),
            ("r/1", 7 * MS, "c1", "ok", "receive", "v2"),
            # v3: re-sent after its ok: unmatched; never received
            ("r/1", 1 * MS, "p0", "invoke", "send", "v3"),
            ("r/1", 2 * MS, "p0", "ok", "send", "v3"),
            ("r/1", 5 * MS, "p0", "invoke", "send", "v3"),
            # v4: no completion, never received
            ("r/1", 0, "p0", "invoke", "send", "v4"),
            # v1 of another run: ack 1 ms, receive 1.5 ms
            ("r/2", 0, "p0", "invoke", "send", "v1"),
            ("r/2", 1 * MS, "p0", "ok", "send", "v1"),
            ("r/2", 1_500_000, "c0", "ok", "receive", "v1"),
            ("r/2", 9 * MS, "c0", "ok", "drain", None),
        ],
        HISTORY_DDL,
    )
    expected = spark.createDataFrame(
        [
            ("r/1", "v1", 2.0, 3.5, True),
            ("r/1", "v2", 0.5, 6.0, True),
            ("r/1", "v3", None, None, False),
            ("r/1", "v4", None, None, True),
            ("r/2", "v1", 1.0, 1.5, True),
        ],
        "run_id string, value string, ack_ms double, receive_ms double, ack_matched boolean",
    )
    assertDataFrameEqual(message_latencies(history), expected)


@pytest.mark.spark
def test_significant_digits(spark: SparkSession) -> None:
    values = spark.createDataFrame(
        [(7.814,), (1234.0,), (0.012345,), (0.0,), (100.4,), (2.5,)], "x double"
    )
    actual = values.select(F.col("x"), significant(F.col("x")).alias("y"))
    expected = spark.createDataFrame(
        [(7.814, 7.81), (1234.0, 1230.0), (0.012345, 0.0123), (0.0, 0.0), (100.4, 100.0),
         (2.5, 2.5)],
        "x double, y double",
    )  # fmt: skip
    assertDataFrameEqual(actual, expected)


@pytest.mark.spark
def test_latency_histogram(spark: SparkSession) -> None:
    latencies = spark.createDataFrame(
        [
            ("r", "a", 2.001, 3.0, True),
            ("r", "b", 1.999, None, True),
            ("r", "c", None, 4.0, False),
        ],
        "run_id string, value string, ack_ms double, receive_ms double, ack_matched boolean",
    )
    expected = spark.createDataFrame(
        [
            ("r", "ack", 2.0, 2),
            ("r", "receive", 3.0, 1),
            ("r", "receive", 4.0, 1),
            ("r", "ack_unmatched", 0.0, 1),
        ],
        "run_id string, metric string, latency_ms double, count long",
    )
    assertDataFrameEqual(latency_histogram(latencies), expected)


@pytest.mark.spark
def test_histogram_percentiles(spark: SparkSession) -> None:
    rows = [("g", "ack", float(v), 1) for v in range(1, 11)]
    rows += [("g", "receive", 2.0, 98), ("g", "receive", 50.0, 2), ("h", "ack", 3.0, 4)]
    histogram = spark.createDataFrame(
        rows, "key string, metric string, latency_ms double, count long"
    )
    # g ack 1..10: p50 is the 5th value; p95 and p99 need 10 of 10. g receive: 98 of 100 are
    # 2.0, so p50 and p95 are 2.0 and p99 is 50.0. h: only ack, all 3.0.
    expected = spark.createDataFrame(
        [
            ("g", 5.0, 10.0, 10.0, 2.0, 2.0, 50.0),
            ("h", 3.0, 3.0, 3.0, None, None, None),
        ],
        "key string, ack_p50_ms double, ack_p95_ms double, ack_p99_ms double, "
        "receive_p50_ms double, receive_p95_ms double, receive_p99_ms double",
    )
    assertDataFrameEqual(histogram_percentiles(histogram, ["key"]), expected)
    rows += [("g", "ack_unmatched", 0.0, 3), ("g", "ack_unmatched", 0.0, 4)]
    histogram = spark.createDataFrame(rows, histogram.schema)
    counted = histogram_percentiles(histogram, ["key"], counted=["ack_unmatched"])
    assert {r["key"]: r["ack_unmatched"] for r in counted.collect()} == {"g": 7, "h": 0}
    assertDataFrameEqual(counted.drop("ack_unmatched"), expected)


def _performance_inputs(spark: SparkSession) -> tuple[DataFrame, DataFrame]:
    runs = labelled(
        spark,
        run("a", nodes=1, acknowledged_per_s=1000.0),
        run("b1", acknowledged_per_s=200.0, size=2048),
        run("b2", acknowledged_per_s=300.0, size=2048),
        unreadable("x", "no result.json"),
    )
    histogram = spark.createDataFrame(
        [
            ("a", "ack", 1.0, 1),
            ("a", "receive", 2.0, 1),
            ("b1", "ack", 4.0, 1),
            ("b2", "ack", 6.0, 1),
            ("b2", "ack_unmatched", 0.0, 2),
            ("x", "ack", 99.0, 1),
        ],
        "run_id string, metric string, latency_ms double, count long",
    )
    return runs, histogram


@pytest.mark.spark
def test_performance_table_and_change_vs_baseline(spark: SparkSession) -> None:
    runs, histogram = _performance_inputs(spark)
    # No HA: 1000 msg/s of 1 KiB. SYNC,SYNC,ALL: (200 + 300) / 2 = 250 msg/s of 2 KiB =
    # 500 KiB/s, 250 / 1000 − 1 = −75 %; its acks 4 and 6: p50 4, p95 and p99 6.
    expected = spark.createDataFrame(
        [
            ("No HA", 0, "1/1", 1, 1000.0, 1000.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 0, 0.0),
            (
                "SYNC,SYNC,ALL",
                2000,
                "1/1",
                2,
                250.0,
                500.0,
                4.0,
                6.0,
                6.0,
                None,
                None,
                None,
                2,
                -75.0,
            ),
        ],
        "config string, config_order int, clients string, runs long, "
        "throughput_msgs_s double, throughput_kib_s double, ack_p50_ms double, "
        "ack_p95_ms double, ack_p99_ms double, receive_p50_ms double, receive_p95_ms double, "
        "receive_p99_ms double, ack_unmatched long, change_pct double",
    )
    actual = change_vs_baseline(performance_table(runs, histogram)).drop(
        "scenario", "target", "backend", "producers", "consumers"
    )
    assertDataFrameEqual(actual, expected)


@pytest.mark.spark
def test_performance_pivot(spark: SparkSession) -> None:
    performance = spark.createDataFrame(
        [
            ("s", "t", "b", "No HA", 1, 1, "1/1", 0.0),
            ("s", "t", "b", "SYNC,SYNC,ALL", 1, 1, "1/1", -61.4),
            ("s", "t", "b", "No HA", 2, 2, "2/2", 0.0),
        ],
        "scenario string, target string, backend string, config string, producers int, "
        "consumers int, clients string, change_pct double",
    )
    expected = spark.createDataFrame(
        [("s", "t", "b", "1/1", 0.0, -61.4), ("s", "t", "b", "2/2", 0.0, None)],
        "scenario string, target string, backend string, clients string, `No HA` double, "
        "`SYNC,SYNC,ALL` double",
    )
    actual = performance_pivot(performance, "change_pct", ["No HA", "SYNC,SYNC,ALL"])
    assertDataFrameEqual(actual, expected, checkRowOrder=True)
