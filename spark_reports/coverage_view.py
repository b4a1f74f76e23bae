"""Behaviour coverage over a campaign's runs (docs/campaigns-guided.md): each campaign's
`coverage.jsonl` — after every run, the distinct behaviours its cell and the campaign had
shown — extracted from the campaign folders, and transformed into the report's two tables.

    coverage_rows(campaigns)       one row per line of each campaign's coverage.jsonl
    coverage_frame(spark, rows)    COVERAGE_POINTS
    coverage_curve(points)         pure: per campaign, distinct behaviours after each run
    coverage_cells(points)         pure: per campaign and cell, runs, behaviours, and the runs
                                   since the cell last reached a new one (`stalled` from
                                   STALLED_AFTER of them)

A campaign folder without coverage.jsonl (one made before campaigns measured it) adds no
row; a torn or unreadable line is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from lab.campaign.coverage import STALLED_AFTER
from spark_reports.campaign_facts import CampaignFacts
from spark_reports.campaign_view import KEY

__all__ = [
    "COVERAGE_POINTS",
    "coverage_cells",
    "coverage_curve",
    "coverage_frame",
    "coverage_rows",
]

COVERAGE_POINTS = StructType(
    [
        StructField("campaign", StringType(), False),
        StructField("order", LongType(), False),  # the line's place: the order runs ended
        StructField("run", LongType(), False),
        *(StructField(k, StringType(), False) for k in KEY),
        StructField("origin", StringType(), True),
        StructField("new", LongType(), False),
        StructField("behaviours", LongType(), False),
        StructField("cell_behaviours", LongType(), False),
    ]
)


def _row(campaign: str, order: int, raw: dict[str, Any]) -> dict[str, Any] | None:
    try:
        cell = raw["cell"]
        return {
            "campaign": campaign,
            "order": order,
            "run": int(raw["run"]),
            **{k: str(cell[k]) for k in KEY},
            "origin": None if raw.get("origin") is None else str(raw["origin"]),
            "new": len(raw.get("new") or ()),
            "behaviours": int(raw["behaviours"]),
            "cell_behaviours": int(raw["cell_behaviours"]),
        }
    except (KeyError, TypeError, ValueError):
        return None


def coverage_rows(campaigns: Iterable[CampaignFacts]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for campaign in campaigns:
        path = Path(campaign.folder) / "coverage.jsonl"
        try:
            lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        except OSError:
            lines = []
        order = 0
        for line in lines:
            try:
                raw = json.loads(line)
            except ValueError:
                continue
            row = _row(campaign.name, order + 1, raw) if isinstance(raw, dict) else None
            if row is not None:
                order += 1
                rows.append(row)
    return rows


def coverage_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    return spark.createDataFrame(rows, COVERAGE_POINTS)


def coverage_curve(points: DataFrame) -> DataFrame:
    """Per campaign, the distinct behaviours after each run, in the order runs ended."""
    return points.select("campaign", "order", "run", "origin", "new", "behaviours")


def coverage_cells(points: DataFrame) -> DataFrame:
    """Per campaign and cell: runs, distinct behaviours, and the runs since the cell last
    reached a behaviour it had not shown (all its runs when it never did)."""
    cell = Window.partitionBy("campaign", *KEY)
    last_new = F.max(F.when(F.col("new") > 0, F.col("order"))).over(cell)
    since = F.when(last_new.isNull() | (F.col("order") > last_new), 1).otherwise(0)
    grouped = points.withColumn("since", since).groupBy("campaign", *KEY)
    return grouped.agg(
        F.count(F.lit(1)).alias("runs"),
        F.max("cell_behaviours").alias("behaviours"),
        F.sum("since").cast(LongType()).alias("runs_since_new"),
    ).withColumn("stalled", (F.col("runs_since_new") >= STALLED_AFTER).cast(BooleanType()))
