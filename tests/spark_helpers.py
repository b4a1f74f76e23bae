"""Shared by the spark_reports tests: hand-made run records and the history schema."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
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


def write_campaign_json(
    campaign: Path, *, started: str, budget_s: float, seed: int, replayed: str | None = None
) -> dict[str, str]:
    """campaign.json for the run folders under `campaign`/runs, as `lab campaign` writes it:
    every failing run showed a failure, every other one new to the failure database; with
    `replayed`, the first failing run is a replay of that recorded failure instead. Returns
    what the database said of each failing run, by run id (new, recorded, replay)."""
    records: list[dict[str, Any]] = []
    known: dict[str, str] = {}
    folders = sorted(p for p in (campaign / "runs").glob("*/*") if p.is_dir())
    for number, folder in enumerate(folders, start=1):
        path = folder / "result.json"
        result = json.loads(path.read_text()) if path.is_file() else {}
        verdict = str(result.get("verdict", "unknown"))
        record: dict[str, Any] = {
            "number": number,
            "kind": "fresh",
            "scenario": folder.parent.name,
            "target": "broker_ref",
            "backend": "process",
            "mode": "replicated-group",
            "seed": result.get("seed", 1),
            "verdict": verdict,
            "violations": result.get("violations", []),
            "seconds": 20.0,
            "folder": folder.relative_to(campaign).as_posix(),
            "failure": None,
            "new_failure": False,
            "reproduced": None,
        }
        if verdict not in ("held", "interrupted") and "error" not in result and result:
            run_id = f"{folder.parent.name}/{folder.name}"
            record["failure"] = f"{number:012x}"
            if replayed is not None and "replay" not in known.values():
                record |= {"kind": "replay", "failure": replayed, "reproduced": True}
                known[run_id] = "replay"
            else:
                record["new_failure"] = len(known) % 2 == 0
                known[run_id] = "new" if record["new_failure"] else "recorded"
        records.append(record)
    replays = [] if replayed is None else [
        {"failure": replayed, "outcome": "still failing", "status": "failing"}
    ]  # fmt: skip
    raw = {
        "v": 1,
        "request": {
            "budget_s": budget_s, "seed": seed, "scenarios": ["random"],
            "targets": ["broker_ref"], "backends": ["process"], "modes": [], "jobs": 2,
            "shard": "1/1",
        },
        "started": started,
        "ended": None,
        "elapsed_s": budget_s,
        "cells": [],
        "skipped": [],
        "runs": records,
        "replays": replays,
    }  # fmt: skip
    (campaign / "campaign.json").write_text(json.dumps(raw, indent=1))
    return known
