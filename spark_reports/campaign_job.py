"""The campaign part of the report job: extract every run folder's result.json and its
campaign's campaign.json, transform them into the cells' frames (held rate, violations,
nights, failover times) and what broke and what is new, collect them as Arrow tables.

    extract_campaign(spark, runs_dirs)       CAMPAIGN_RUNS frame + each campaign's facts
    campaign_frames(runs, previous)          pure: the frames below, by table name
    collect_campaign(frames, say)            each frame collected in its order

To add a table: a pure transform, an entry in `campaign_frames` and one in `CAMPAIGN_TABLES`
(its row order); the page's sections read it by name (`page_data.PageData.tables`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from spark_reports.campaign_facts import CampaignFacts, Campaigns
from spark_reports.campaign_runs import CAMPAIGN_RUNS, campaign_runs_frame, read_campaign_run
from spark_reports.campaign_view import (
    KEY,
    campaign_table,
    failover_histogram,
    nights_table,
    violations_by_kind,
)
from spark_reports.coverage_view import (
    coverage_cells,
    coverage_curve,
    coverage_frame,
    coverage_rows,
)
from spark_reports.failures_view import FAILING_COLUMNS, failing_runs, failure_kinds, new_since
from spark_reports.outputs import collect_table
from spark_reports.run_folders import list_run_folders

__all__ = [
    "CAMPAIGN_TABLES",
    "FAILING_SCHEMA",
    "CampaignInputs",
    "campaign_frames",
    "collect_campaign",
    "extract_campaign",
]

Say = Callable[[str], None]

CAMPAIGN_TABLES: dict[str, tuple[str, ...]] = {
    "campaign": KEY,
    "campaign_violations": (*KEY, "kind"),
    "campaign_nights": (*KEY, "night"),
    "campaign_failover_histogram": (*KEY, "bucket_order"),
    "failing_runs": ("violations", *KEY, "run_id"),
    "failure_kinds": ("kind",),
    "new_since_previous": (*KEY, "kind"),
    "coverage_curve": ("campaign", "order"),
    "coverage_cells": ("campaign", *KEY),
}
"""The tables (file names) and the order of their rows."""

FAILING_SCHEMA = StructType([CAMPAIGN_RUNS[name] for name in FAILING_COLUMNS])
"""The failing runs table's schema (a previous report's copy is read with it)."""


@dataclass(frozen=True)
class CampaignInputs:
    runs: DataFrame
    campaigns: tuple[CampaignFacts, ...]
    outside: int
    """Run folders in no campaign."""
    coverage: DataFrame | None = None
    """Each campaign's coverage.jsonl (spark_reports.coverage_view)."""


def extract_campaign(spark: SparkSession, runs_dirs: Sequence[Path], say: Say) -> CampaignInputs:
    """Every run folder under `runs_dirs` as a CAMPAIGN_RUNS row, and the campaigns they are in."""
    campaigns = Campaigns()
    records = [read_campaign_run(f, campaigns) for f in list_run_folders(runs_dirs)]
    found = tuple(campaigns.seen())
    outside = sum(r.campaign is None for r in records)
    say(f"extract: {len(records)} results, {outside} of them in no campaign of {len(found)}")
    coverage = coverage_frame(spark, coverage_rows(found))
    return CampaignInputs(campaign_runs_frame(spark, records), found, outside, coverage)


def previous_frame(spark: SparkSession, failing: pa.Table) -> DataFrame:
    """A previous report's failing runs (`page_data.read_previous`) as a frame."""
    return spark.createDataFrame(failing.select(list(FAILING_COLUMNS)).to_pylist(), FAILING_SCHEMA)


def campaign_frames(
    runs: DataFrame, previous: DataFrame | None = None, coverage: DataFrame | None = None
) -> dict[str, DataFrame]:
    """Every table of the campaign part, lazily, by file name (`new_since_previous` only with
    a previous report's failing runs, the coverage tables only with coverage points)."""
    failing = failing_runs(runs)
    frames = {
        "campaign": campaign_table(runs),
        "campaign_violations": violations_by_kind(runs),
        "campaign_nights": nights_table(runs),
        "campaign_failover_histogram": failover_histogram(runs),
        "failing_runs": failing,
        "failure_kinds": failure_kinds(failing),
    }
    if previous is not None:
        frames["new_since_previous"] = new_since(failing, previous)
    if coverage is not None:
        frames["coverage_curve"] = coverage_curve(coverage)
        frames["coverage_cells"] = coverage_cells(coverage)
    return frames


def collect_campaign(frames: dict[str, DataFrame], say: Say) -> dict[str, pa.Table]:
    tables = {}
    for name, order in CAMPAIGN_TABLES.items():
        if name in frames:
            tables[name] = collect_table(frames[name].orderBy(*order))
            say(f"transform: {name}, {tables[name].num_rows} rows")
    return tables
