"""Shared by the spark_reports tests: hand-made run records and the history schema."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_reports.extract import runs_frame
from spark_reports.labels import with_labels
from spark_reports.run_folders import RunRecord


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


HISTORY_DDL = "run_id string, time long, process string, type string, f string, value string"
