"""The campaign view as a job: extract the run folders' results, transform them into the view's
frames, load them as CSV + Parquet beside the report and as a section of report.html.

    campaign_frames(runs)                    pure: CAMPAIGN_RUNS frame → the view's frames
    collect_campaign(frames, say)            each frame collected (sorted) as an Arrow table
    add_campaign_view(spark, dirs, out, say) the whole job; the section goes into report.html
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from spark_reports.campaign_page import campaign_section
from spark_reports.campaign_runs import campaign_runs, campaign_runs_frame
from spark_reports.campaign_view import (
    KEY,
    campaign_table,
    failover_histogram,
    nights_table,
    violations_by_kind,
)
from spark_reports.html_page import insert_sections
from spark_reports.outputs import collect_table, write_table

__all__ = ["CAMPAIGN_TABLES", "add_campaign_view", "campaign_frames", "collect_campaign"]

Say = Callable[[str], None]

CAMPAIGN_TABLES: dict[str, tuple[str, ...]] = {
    "campaign": KEY,
    "campaign_violations": (*KEY, "kind"),
    "campaign_nights": (*KEY, "night"),
    "campaign_failover_histogram": (*KEY, "bucket_order"),
}
"""The view's tables (file names) and the order of their rows."""

PLACED_BEFORE = "Broken runs"
"""The report section the campaign view goes before (after Reliability)."""


def campaign_frames(runs: DataFrame) -> dict[str, DataFrame]:
    """Every table of the view, lazily, by file name."""
    return {
        "campaign": campaign_table(runs),
        "campaign_violations": violations_by_kind(runs),
        "campaign_nights": nights_table(runs),
        "campaign_failover_histogram": failover_histogram(runs),
    }


def collect_campaign(frames: dict[str, DataFrame], say: Say) -> dict[str, pa.Table]:
    tables = {}
    for name, order in CAMPAIGN_TABLES.items():
        tables[name] = collect_table(frames[name].orderBy(*order))
        say(f"transform: {name}, {tables[name].num_rows} rows")
    return tables


def add_campaign_view(
    spark: SparkSession, runs_dirs: Sequence[Path], out: Path, say: Say
) -> dict[str, pa.Table]:
    """Read every run folder's result under `runs_dirs`, write the view's tables into `out`
    and its section into `out/report.html` (written by the report job before)."""
    records = campaign_runs(runs_dirs)
    say(f"extract: campaign view, {len(records)} run folders")
    tables = collect_campaign(campaign_frames(campaign_runs_frame(spark, records)), say)
    out.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        write_table(table, out, name)
    page = out / "report.html"
    text = page.read_text(encoding="utf-8")
    section = campaign_section(tables)
    page.write_text(insert_sections(text, [section], before=PLACED_BEFORE), encoding="utf-8")
    say(f"load: campaign view, {len(tables)} tables, section in {page}")
    return tables
