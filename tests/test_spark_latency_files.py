"""Histograms computed file by file in the tasks (`latency_files`) are, row for row, the ones
Spark's `latency_histogram(message_latencies(…))` computes from the same history."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from lab.judge.columnar import write_columnar_copies
from spark_reports.extract import LATENCY_COLUMNS, read_history_jsonl
from spark_reports.latency import (
    copies_histogram,
    latency_histogram,
    message_latencies,
    significant,
)
from spark_reports.latency_files import significant as significant_here

MS = 1_000_000
# Latencies (ns) at the edges of rounding to three digits: powers of ten, halves, 0, < 0.
EDGES = [0, 1, 999, 1000, 1234, 1235, 1245, 12_345, 99_950, 999_499, 999_500, MS, 10 * MS]
EDGES += [1_235_000, 12_345_000, 99_949_999, 99_950_000, 100 * MS, 1000 * MS - 1, 3_600_000 * MS]


def _history(folder: Path, rng: random.Random) -> None:
    """Messages whose send→ack and send→receive hit the edges, and the odd cases: retries,
    an ack before the last invoke, two senders, an ok with no invoke, a receive before the
    send, a receive of an id nobody sent, a receive invoke without a value."""
    ops: list[tuple[int, str, str, str, str | None]] = []
    for number, latency in enumerate(EDGES + [rng.randrange(1, 10**10) for _ in range(300)]):
        value, start = f"p0-{number}", 10**12 + number * 10**9
        ops += [(start, "p0", "invoke", "send", value)]
        ops += [(start + latency, "p0", "ok", "send", value)]
        ops += [(start + 2 * latency + 7, "c0", "ok", "receive", value)]
    ops += [(5, "p1", "invoke", "send", "r"), (9, "p1", "invoke", "send", "r")]
    ops += [(20, "p1", "ok", "send", "r"), (21, "c0", "ok", "receive", "r")]
    ops += [(30, "p1", "invoke", "send", "late"), (40, "p1", "ok", "send", "late")]
    ops += [(50, "p1", "invoke", "send", "late")]
    ops += [(60, "p1", "invoke", "send", "two"), (61, "p2", "invoke", "send", "two")]
    ops += [(70, "p1", "ok", "send", "two"), (71, "p1", "ok", "send", "orphan")]
    ops += [(80, "c0", "ok", "receive", "early"), (90, "p1", "invoke", "send", "early")]
    ops += [(95, "c0", "ok", "receive", "ghost"), (96, "c0", "invoke", "receive", None)]
    ops.sort(key=lambda op: op[0])
    lines = [
        json.dumps({"index": i, "time": t, "process": p, "type": k, "f": f, "value": v})
        for i, (t, p, k, f, v) in enumerate(ops)
    ]
    folder.mkdir(parents=True)
    (folder / "history.jsonl").write_text("".join(line + "\n" for line in lines))
    write_columnar_copies(folder)


@pytest.mark.spark
def test_file_histograms_are_sparks_histograms(spark: SparkSession, tmp_path: Path) -> None:
    folders = [tmp_path / "scenario" / f"20260105T00000{n}Z-{n}" for n in range(3)]
    for number, folder in enumerate(folders):
        _history(folder, random.Random(number))
    paths = [str(folder / "history.parquet") for folder in folders]
    history = read_history_jsonl(spark, [str(folder) for folder in folders])
    expected = latency_histogram(message_latencies(history.select(*LATENCY_COLUMNS)))
    actual = copies_histogram(spark, paths)
    assertDataFrameEqual(actual, expected)
    metrics = {row["metric"] for row in actual.select("metric").distinct().collect()}
    assert metrics == {"ack", "receive", "ack_unmatched"}


@pytest.mark.spark
def test_grouped_files_are_the_rolled_up_histograms(spark: SparkSession, tmp_path: Path) -> None:
    """Files summed in the tasks under a group's run id are Spark's histograms of the same
    runs summed per group (`rolled_up`'s sums)."""
    folders = [tmp_path / "scenario" / f"20260105T00000{n}Z-{n}" for n in range(3)]
    for number, folder in enumerate(folders):
        _history(folder, random.Random(number))
    paths = [str(folder / "history.parquet") for folder in folders]
    ids = ["/".join(path.split("/")[-3:-1]) for path in paths]
    groups = [(ids[0], paths[:2]), (ids[2], paths[2:])]
    per_run = copies_histogram(spark, paths)
    to_group = spark.createDataFrame(
        [(ids[0], ids[0]), (ids[1], ids[0]), (ids[2], ids[2])], "run_id string, group string"
    )
    expected = (
        per_run.join(to_group, "run_id")
        .groupBy("group", "metric", "latency_ms")
        .agg(F.sum("count").alias("count"))
        .withColumnRenamed("group", "run_id")
    )
    actual = copies_histogram(spark, [], groups)
    assertDataFrameEqual(actual, expected.select("run_id", "metric", "latency_ms", "count"))
    assert actual.count() < per_run.count()


@pytest.mark.spark
def test_rounding_is_sparks_rounding(spark: SparkSession) -> None:
    rng = np.random.default_rng(7)
    nanos = np.concatenate(
        [
            np.array(EDGES, np.int64),
            *[np.arange(10**k - 300, 10**k + 300) for k in range(1, 16)],
            *[np.arange(5 * 10**k - 50, 5 * 10**k + 50) for k in range(1, 16)],
            rng.integers(1, 10**15, 20_000),
        ]
    )
    values = np.concatenate([nanos / 1e6, -nanos[:50] / 1e6])
    frame = spark.createDataFrame([(float(v),) for v in values], "x double")
    theirs = [row[0] for row in frame.select(significant(F.col("x"))).collect()]
    assert significant_here(values).tolist() == theirs
