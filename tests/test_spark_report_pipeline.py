"""spark_reports end to end: run folders, partial runs, the history reader, compaction, CLI."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual
from spark_helpers import HISTORY_DDL

from lab.bench.synth_runs import synthesize_runs
from lab.ground.errors import UsageError
from spark_reports.cli import add_arguments, run_report
from spark_reports.compaction import compact
from spark_reports.extract import (
    LATENCY_COLUMNS,
    history_for,
    read_history_jsonl,
    store_latency,
    store_runs,
)
from spark_reports.failures_view import FAILING_COLUMNS
from spark_reports.latency import latency_histogram, message_latencies
from spark_reports.run_folders import read_run, read_runs

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


def test_an_interrupted_run_is_named_not_counted(tmp_path: Path) -> None:
    synthesize_runs(tmp_path, runs=1, operations_per_run=120, seed=5, partial=0)
    folder = store_run_folder(tmp_path)
    result = json.loads((folder / "result.json").read_text())
    result["verdict"] = "interrupted"
    result["reasons"] = ["interrupted by SIGTERM in phase faults"]
    (folder / "result.json").write_text(json.dumps(result))
    record = read_run(folder)
    assert record.problem == "run was interrupted by SIGTERM in phase faults"
    assert record.verdict is None


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
    # Last night's report showed two masters in master-crash, and no loss.
    previous = tmp_path / "last-night"
    previous.mkdir()
    cell = {"scenario": "master-crash", "target": "broker_ref", "backend": "process"}
    row = {**cell, "mode": "replicated-group", "violations": ["two-masters"], "seed": 1}
    kinds = {"violations": pa.list_(pa.string()), "seed": pa.int64()}
    schema = pa.schema([(c, kinds.get(c, pa.string())) for c in FAILING_COLUMNS])
    table = pa.Table.from_pylist([{c: row.get(c) for c in FAILING_COLUMNS}], schema)
    pq.write_table(table, previous / "failing_runs.parquet")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    said: list[str] = []
    args = parser.parse_args(
        [str(runs_dir), "--out", str(out), "--compact", str(tmp_path / "st"),
         "--previous", str(previous)]
    )  # fmt: skip
    assert run_report(args, said.append) == 0
    news = _csv_rows(out / "new_since_previous.csv")
    assert [(r["scenario"], r["kind"], int(r["runs"])) for r in news] == [
        ("master-crash", "lost", len(synth.broken))
    ]
    assert json.loads((out / "report.json").read_text())["previous"] == str(previous)
    page = (out / "report.html").read_text()
    assert "1 violation kind in a cell it did not show" in page
    assert "data:image/png;base64," in page
    assert "Runs that could not be read" in page
    for run_id in (*synth.broken, *synth.unreadable):
        assert run_id in page
    broken = _csv_rows(out / "broken_runs.csv")
    assert sorted(r["run_id"] for r in broken) == sorted(synth.broken)
    assert all(r["reproduce"].startswith("lab replay ") for r in broken)
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
