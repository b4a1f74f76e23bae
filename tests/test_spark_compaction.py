"""Incremental compaction: the manifest says what the store holds; only unseen run folders
are read and compacted; everything else comes from the store, with the same report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual
from spark_helpers import run

from lab.bench.synth_runs import synthesize_runs
from spark_reports.compaction import compact
from spark_reports.extract import runs_frame, store_rollup, store_runs
from spark_reports.jobs import extract_inputs
from spark_reports.latency import rolled_up
from spark_reports.manifest import (
    Commits,
    commits,
    content_hash,
    read_manifest,
    signature,
    split_seen,
)
from spark_reports.performance import change_vs_baseline, performance_table
from spark_reports.reliability import reliability_table
from spark_reports.run_folders import list_run_folders
from spark_reports.trend import trend_table, with_period


def _folder(runs_dir: Path, run_id: str) -> Path:
    return runs_dir / run_id


# --- the manifest (no Spark) ----------------------------------------------------------------


def test_signature_and_hash_follow_the_run_files(tmp_path: Path) -> None:
    synthesize_runs(tmp_path, runs=1, operations_per_run=120, seed=5, partial=0)
    (folder,) = list_run_folders([tmp_path])
    mark, digest = signature(folder), content_hash(folder)
    (folder / "history.parquet").unlink()  # a copy is not a run file
    assert (signature(folder), content_hash(folder)) == (mark, digest)
    later = (folder / "spec.json").stat().st_mtime_ns + 5_000_000_000
    os.utime(folder / "spec.json", ns=(later, later))
    assert (signature(folder) != mark, content_hash(folder)) == (True, digest)
    with (folder / "events.jsonl").open("a") as events:
        events.write('{"v": 1, "time": 1, "kind": "x", "node": null}\n')
    assert content_hash(folder) != digest


# --- compaction -------------------------------------------------------------------------------


@pytest.mark.spark
def test_only_unseen_folders_are_compacted(spark: SparkSession, tmp_path: Path) -> None:
    runs_dir, store = tmp_path / "runs", tmp_path / "store"
    first = synthesize_runs(runs_dir, runs=6, operations_per_run=150, seed=3, partial=2)
    done = compact([runs_dir], store, spark=spark)
    readable = sorted(set(done.compacted))
    assert len(readable) == 4 and sorted(done.left_out) == sorted(first.unreadable)
    synthesize_runs(runs_dir, runs=3, operations_per_run=150, seed=4, partial=0)
    again = compact([runs_dir], store, spark=spark)
    assert sorted(again.already) == readable
    assert len(again.compacted) == 3 and not set(again.compacted) & set(readable)
    assert sorted(again.left_out) == sorted(first.unreadable)  # looked at again, still unreadable
    assert sorted(read_manifest(store)) == sorted([*readable, *again.compacted])
    assert store_runs(spark, store).count() == 7
    assert compact([runs_dir], store, spark=spark).compacted == ()


@pytest.mark.spark
def test_a_changed_folder_supersedes_its_stored_rows(spark: SparkSession, tmp_path: Path) -> None:
    runs_dir, store = tmp_path / "runs", tmp_path / "store"
    synthesize_runs(runs_dir, runs=3, operations_per_run=150, seed=8, partial=0)
    done = compact([runs_dir], store, spark=spark)
    changed = done.compacted[0]
    result_path = _folder(runs_dir, changed) / "result.json"
    result = json.loads(result_path.read_text())
    result["verdict"], result["reasons"] = "broken", ["edited"]
    result_path.write_text(json.dumps(result))
    again = compact([runs_dir], store, spark=spark)
    assert again.compacted == (changed,)
    rows = store_runs(spark, store).where(F.col("run_id") == changed).collect()
    assert [(row["verdict"], row["batch"]) for row in rows] == [("broken", again.batch)]
    assert store_runs(spark, store).count() == 3
    _same_report(spark, runs_dir, store)  # the first batch is not whole any more


def _same_report(spark: SparkSession, runs_dir: Path, store: Path) -> None:
    """The report's tables from the store are those from the folders alone."""
    from_folders = extract_inputs(spark, [runs_dir], None, lambda text: None)
    from_store = extract_inputs(spark, [runs_dir], store, lambda text: None)
    assertDataFrameEqual(reliability_table(from_store.runs), reliability_table(from_folders.runs))
    assertDataFrameEqual(
        change_vs_baseline(performance_table(from_store.runs, from_store.histogram)),
        change_vs_baseline(performance_table(from_folders.runs, from_folders.histogram)),
    )
    assertDataFrameEqual(
        trend_table(with_period(from_store.runs, "day"), from_store.histogram),
        trend_table(with_period(from_folders.runs, "day"), from_folders.histogram),
    )


@pytest.mark.spark
def test_a_copied_folder_is_seen_by_its_content(spark: SparkSession, tmp_path: Path) -> None:
    runs_dir, store = tmp_path / "runs", tmp_path / "store"
    synthesize_runs(runs_dir, runs=2, operations_per_run=150, seed=9, partial=0)
    done = compact([runs_dir], store, spark=spark)
    touched = _folder(runs_dir, done.compacted[0])
    later = (touched / "history.jsonl").stat().st_mtime_ns + 5_000_000_000
    for name in ("spec.json", "history.jsonl", "events.jsonl", "result.json"):
        os.utime(touched / name, ns=(later, later))
    again = compact([runs_dir], store, spark=spark)
    assert (again.compacted, sorted(again.already)) == ((), sorted(done.compacted))
    entry = read_manifest(store)[done.compacted[0]]
    assert (entry.signature, entry.batch) == (signature(touched), done.batch)
    assert split_seen(list_run_folders([runs_dir]), read_manifest(store)).renewed == ()


@pytest.mark.spark
def test_a_batch_without_its_manifest_counts_for_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    runs_dir, store = tmp_path / "runs", tmp_path / "store"
    synthesize_runs(runs_dir, runs=2, operations_per_run=150, seed=10, partial=0)
    first = compact([runs_dir], store, spark=spark)
    synthesize_runs(runs_dir, runs=2, operations_per_run=150, seed=11, partial=0)
    cut_short = compact([runs_dir], store, spark=spark)
    (manifest,) = (store / "manifest").glob(f"*-{cut_short.batch}.parquet")
    manifest.unlink()  # as if the batch had died before its commit
    stored = {row["run_id"] for row in store_runs(spark, store).collect()}
    assert stored == set(first.compacted)
    redone = compact([runs_dir], store, spark=spark)
    assert sorted(redone.compacted) == sorted(cut_short.compacted)
    assert store_runs(spark, store).count() == 4


@pytest.mark.spark
def test_the_report_from_the_store_is_the_report_from_the_folders(
    spark: SparkSession, tmp_path: Path
) -> None:
    runs_dir, store = tmp_path / "runs", tmp_path / "store"
    synthesize_runs(runs_dir, runs=14, operations_per_run=200, seed=12, partial=3)
    said: list[str] = []
    from_folders = extract_inputs(spark, [runs_dir], None, said.append)
    compact([runs_dir], store, spark=spark)
    from_store = extract_inputs(spark, [runs_dir], store, said.append)
    assert (from_store.from_store, from_store.from_folders) == (11, 3)
    assert (from_folders.from_store, from_folders.from_folders) == (0, 14)
    rolled = store_rollup(spark, store, commits(store) or Commits((), ()))
    assert rolled is not None and rolled.count() <= from_folders.histogram.count()
    _same_report(spark, runs_dir, store)


@pytest.mark.spark
def test_rolled_up_sums_runs_alike_under_the_smallest_id(spark: SparkSession) -> None:
    runs = runs_frame(spark, [run("b"), run("a"), run("c", producers=2), run("d", date=None)])
    histogram = spark.createDataFrame(
        [
            ("a", "ack", 1.0, 2),
            ("b", "ack", 1.0, 3),
            ("b", "ack", 2.0, 1),
            ("c", "ack", 1.0, 5),
            ("d", "receive", 4.0, 7),
        ],
        "run_id string, metric string, latency_ms double, count long",
    )
    expected = spark.createDataFrame(
        [
            ("a", "ack", 1.0, 5),
            ("a", "ack", 2.0, 1),
            ("c", "ack", 1.0, 5),
            ("d", "receive", 4.0, 7),
        ],
        "run_id string, metric string, latency_ms double, count long",
    )
    assertDataFrameEqual(rolled_up(histogram, runs), expected)
