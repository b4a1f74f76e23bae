"""spark_reports: each transformation on tiny hand-made frames, partial runs, compaction, the CLI.

Expected values are worked out by hand in the comments, never computed with the code under
test. Tests that need Spark are marked `spark` and share one local session.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from lab.bench.synth_runs import synthesize_runs
from lab.ground.errors import UsageError
from spark_reports.cli import add_arguments, run_report
from spark_reports.compaction import compact
from spark_reports.extract import (
    LATENCY_COLUMNS,
    history_for,
    read_history_jsonl,
    runs_frame,
    store_latency,
    store_runs,
)
from spark_reports.labels import with_labels
from spark_reports.latency import (
    histogram_percentiles,
    latency_histogram,
    message_latencies,
    significant,
)
from spark_reports.performance import change_vs_baseline, performance_pivot, performance_table
from spark_reports.reliability import broken_runs, reliability_table, unreadable_runs
from spark_reports.run_folders import RunRecord, read_run, read_runs
from spark_reports.session import spark_session
from spark_reports.trend import regressions, trend_table, with_period

MS = 1_000_000  # nanoseconds


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    yield spark_session("local[2]", app_name="lab-report-tests")


def run(run_id: str, **fields: Any) -> RunRecord:
    """A readable 2-node SYNC,SYNC,ALL run in scenario s, unless told otherwise."""
    base = RunRecord(
        run_id=run_id,
        folder=f"/runs/{run_id}",
        scenario="s",
        date="2026-01-05",
        stamp="20260105T000000Z",
        seed=1,
        target="t",
        backend="b",
        nodes=2,
        master_sync="SYNC",
        replica_sync="SYNC",
        ack_policy="ALL",
        coalescing_sync=False,
        producers=1,
        consumers=1,
        size=1024,
        git_revision="rev1",
        lab_version="0.1.0",
        verdict="held",
        reasons=(),
        reproduce=f"lab replay {run_id}",
        acknowledged=100,
        received=100,
        lost=0,
        duplicated=0,
        duplicate_deliveries=0,
        resurrected=0,
        unexpected=0,
        operations=300,
        workload_s=10.0,
        acknowledged_per_s=10.0,
        unavailable_total_s=0.0,
        unavailable_longest_s=0.0,
        failover_s=(),
        two_masters_seen=False,
    )
    return replace(base, **fields)


def unreadable(run_id: str, problem: str, **fields: Any) -> RunRecord:
    base = RunRecord(
        run_id=run_id,
        folder=f"/runs/{run_id}",
        scenario="s",
        date="2026-01-05",
        stamp="20260105T000000Z",
        problem=problem,
    )
    return replace(base, **fields)


def labelled(spark: SparkSession, *records: RunRecord) -> DataFrame:
    return with_labels(runs_frame(spark, records))


# --- run folders (no Spark) -------------------------------------------------------------


def test_partial_and_malformed_folders_are_named_not_read(tmp_path: Path) -> None:
    store = synthesize_runs(tmp_path, runs=4, operations_per_run=120, seed=5, partial=4)
    problems = {r.run_id: r.problem for r in read_runs([tmp_path])}
    assert set(problems) == set(store.unreadable)
    assert sorted(str(p).split(":")[0].split(" (")[0] for p in problems.values()) == [
        "no result.json",
        "no result.json",
        "run did not finish",
        "unparsable spec.json",
    ]


def test_a_torn_last_line_in_a_finished_run_is_a_problem(tmp_path: Path) -> None:
    synthesize_runs(tmp_path, runs=1, operations_per_run=120, seed=5, partial=0)
    folder = store_run_folder(tmp_path)
    assert read_run(folder).problem is None
    with (folder / "events.jsonl").open("a") as events:
        events.write('{"v":1,"time":5,"ki')
    assert read_run(folder).problem == "torn last line in events.jsonl"


def store_run_folder(root: Path) -> Path:
    (folder,) = [p for p in root.glob("*/*") if p.is_dir()]
    return folder


def test_missing_runs_dir_is_a_usage_error(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args([str(tmp_path / "nope"), "--out", str(tmp_path / "out")])
    with pytest.raises(UsageError, match="does not exist"):
        run_report(args, lambda text: None)


def test_synthetic_store_is_deterministic(tmp_path: Path) -> None:
    one = synthesize_runs(tmp_path / "a", runs=6, operations_per_run=150, seed=9)
    two = synthesize_runs(tmp_path / "b", runs=6, operations_per_run=150, seed=9)
    assert (one.broken, one.unreadable, one.operations) == (
        two.broken,
        two.unreadable,
        two.operations,
    )
    for path in sorted((tmp_path / "a").rglob("history.jsonl")):
        twin = tmp_path / "b" / path.relative_to(tmp_path / "a")
        assert path.read_bytes() == twin.read_bytes()


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
                1,
                0,
                0,
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
        "runs long, held long, broken long, unknown long, unreadable long, "
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


HISTORY_DDL = "run_id string, time long, process string, type string, f string, value string"


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


# --- extract and compaction ---------------------------------------------------------------


@pytest.mark.spark
def test_history_reader_skips_a_torn_last_line(spark: SparkSession, tmp_path: Path) -> None:
    folder = tmp_path / "scn" / "20260105T000000Z-1"
    folder.mkdir(parents=True)
    lines = [
        {"index": 0, "time": 5, "process": "p0", "type": "invoke", "f": "send", "value": "a"},
        {"index": 1, "time": 9, "process": "p0", "type": "ok", "f": "send", "value": "a"},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines) + '{"index":2,"time":1'
    (folder / "history.jsonl").write_text(text)
    expected = spark.createDataFrame(
        [
            ("scn/20260105T000000Z-1", 5, "p0", "invoke", "send", "a"),
            ("scn/20260105T000000Z-1", 9, "p0", "ok", "send", "a"),
        ],
        HISTORY_DDL,
    )
    actual = read_history_jsonl(spark, [str(folder)]).select(*LATENCY_COLUMNS)
    assertDataFrameEqual(actual, expected)


@pytest.mark.spark
def test_compaction_is_idempotent_and_preferred(spark: SparkSession, tmp_path: Path) -> None:
    runs_dir, store = tmp_path / "runs", tmp_path / "store"
    synth = synthesize_runs(runs_dir, runs=6, operations_per_run=150, seed=3, partial=2)
    first = compact([runs_dir], store, spark=spark)
    second = compact([runs_dir], store, spark=spark)
    assert len(first.compacted) == 4
    assert sorted(first.left_out) == sorted(synth.unreadable)
    assert second.compacted == ()
    assert sorted(second.already) == sorted(first.compacted)
    readable = [r for r in read_runs([runs_dir]) if r.problem is None]
    lines = sum(len((Path(r.folder) / "history.jsonl").read_text().splitlines()) for r in readable)
    stored = store_runs(spark, store)
    assert stored.count() == 4
    from_store = history_for(spark, [], store, stored)
    assert from_store.count() == lines
    from_folders = read_history_jsonl(spark, [r.folder for r in readable]).select(*LATENCY_COLUMNS)
    assertDataFrameEqual(from_store, from_folders)
    from_store_latency = store_latency(spark, store, stored)
    assert from_store_latency is not None
    assertDataFrameEqual(from_store_latency, latency_histogram(message_latencies(from_folders)))
    dates = sorted(p.name for p in (store / "runs").glob("scenario=*/date=*"))
    assert dates and all(d.startswith("date=2026-01-") for d in dates)


# --- end to end ---------------------------------------------------------------------------


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as stream:
        return list(csv.DictReader(stream))


@pytest.mark.spark
def test_report_end_to_end(spark: SparkSession, tmp_path: Path) -> None:
    runs_dir, out = tmp_path / "runs", tmp_path / "out"
    synth = synthesize_runs(runs_dir, runs=18, operations_per_run=150, seed=12, partial=4)
    assert synth.broken, "the seed should give at least one broken run"
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    said: list[str] = []
    args = parser.parse_args([str(runs_dir), "--out", str(out), "--compact", str(tmp_path / "st")])
    assert run_report(args, said.append) == 0
    page = (out / "report.html").read_text()
    assert "data:image/png;base64," in page
    assert "Runs that could not be read" in page
    for run_id in (*synth.broken, *synth.unreadable):
        assert run_id in page
    broken = _csv_rows(out / "broken_runs.csv")
    assert sorted(r["run_id"] for r in broken) == sorted(synth.broken)
    assert all(r["reproduce"].startswith(".venv/bin/lab replay ") for r in broken)
    assert sorted(r["run_id"] for r in _csv_rows(out / "unreadable_runs.csv")) == sorted(
        synth.unreadable
    )
    reliability = _csv_rows(out / "reliability.csv")
    assert sum(int(r["runs"]) for r in reliability) == 18 - 4
    assert sum(int(r["unreadable"]) for r in reliability) == 4
    pivot = _csv_rows(out / "performance_change_pct.csv")
    throughput = [r for r in pivot if r["scenario"] == "durability-throughput"]
    assert [r["clients"] for r in throughput] == [
        "1/1",
        "2/2",
        "4/4",
        "8/8",
        "16/16",
        "32/32",
        "64/64",
    ][: len(throughput)]
    assert all(r["No HA"] == "" or float(r["No HA"]) == 0.0 for r in throughput)
    assert any(line.startswith("compaction:") for line in said)
    for name in ("reliability", "performance", "trend", "regressions"):
        assert (out / f"{name}.parquet").is_file()
