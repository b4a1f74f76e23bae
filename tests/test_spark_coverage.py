"""The report's behaviour coverage: campaign folders' coverage.jsonl read (a torn line and a
folder without one skipped), the curve and the cells on tiny frames (runs since the last new
behaviour, stalled from five), and the section — a chart and a table, or one sentence when
no campaign measured coverage."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from spark_reports.campaign_facts import CampaignFacts
from spark_reports.coverage_page import coverage_section
from spark_reports.coverage_view import (
    coverage_cells,
    coverage_curve,
    coverage_frame,
    coverage_rows,
)
from spark_reports.html_page import Chart, Table, Text
from spark_reports.page_data import PageData, ReportFacts

GROUP = {"scenario": "random", "target": "broker_ref", "backend": "process", "mode": "rg"}
AP = {**GROUP, "mode": "ap"}


def _point(run: int, cell: dict[str, str], new: int, total: int, in_cell: int) -> str:
    return json.dumps(
        {
            "v": 1, "run": run, "cell": cell, "origin": "fresh", "parent": None,
            "verdict": "held", "new": [f"b{run}.{i}" for i in range(new)], "features": [],
            "behaviours": total, "cell_behaviours": in_cell,
        }
    )  # fmt: skip


def _campaigns(tmp_path: Path) -> list[CampaignFacts]:
    night = tmp_path / "night"
    night.mkdir()
    lines = [
        _point(1, GROUP, 5, 5, 5),
        _point(3, AP, 4, 9, 4),  # the order runs ended: 3 before 2
        _point(2, GROUP, 2, 11, 7),
        *[_point(n, GROUP, 0, 11, 7) for n in range(4, 9)],  # five runs with nothing new
    ]
    (night / "coverage.jsonl").write_text("\n".join(lines) + '\n{"run": 9, "cel')  # torn
    old = tmp_path / "old"
    old.mkdir()  # a campaign from before coverage was measured
    return [CampaignFacts("night", str(night)), CampaignFacts("old", str(old))]


@pytest.mark.spark
def test_the_curve_and_the_cells_on_a_tiny_frame(tmp_path: Path, spark: SparkSession) -> None:
    rows = coverage_rows(_campaigns(tmp_path))
    assert [(r["order"], r["run"], r["new"]) for r in rows] == [
        (1, 1, 5), (2, 3, 4), (3, 2, 2), (4, 4, 0), (5, 5, 0), (6, 6, 0), (7, 7, 0), (8, 8, 0),
    ]  # fmt: skip
    points = coverage_frame(spark, rows)
    curve = [
        (r["order"], r["behaviours"]) for r in coverage_curve(points).orderBy("order").collect()
    ]
    assert curve == [(1, 5), (2, 9), (3, 11), (4, 11), (5, 11), (6, 11), (7, 11), (8, 11)]
    cells = {r["mode"]: r.asDict() for r in coverage_cells(points).collect()}
    assert {k: cells["rg"][k] for k in ("runs", "behaviours", "runs_since_new", "stalled")} == {
        "runs": 7, "behaviours": 7, "runs_since_new": 5, "stalled": True,
    }  # fmt: skip
    assert {k: cells["ap"][k] for k in ("runs", "behaviours", "runs_since_new", "stalled")} == {
        "runs": 1, "behaviours": 4, "runs_since_new": 0, "stalled": False,
    }  # fmt: skip


def _data(tables: dict[str, pa.Table]) -> PageData:
    return PageData(tables, ReportFacts(("/runs",), "2026-01-06T07:00:00Z", 9, 0, "day", 1.5))


def test_the_section_draws_the_curve_and_lists_the_cells(tmp_path: Path) -> None:
    curve = pa.Table.from_pylist(
        [{"campaign": c, "order": n, "run": n, "origin": "fresh", "new": 1, "behaviours": b}
         for c, values in (("guided", (5, 9, 12)), ("blind", (4, 8, 9))) for n, b in
         enumerate(values, start=1)]
    )  # fmt: skip
    cells = pa.Table.from_pylist(
        [{"campaign": "guided", **GROUP, "runs": 3, "behaviours": 12, "runs_since_new": 0,
          "stalled": False}]
    )  # fmt: skip
    section = coverage_section(_data({"coverage_curve": curve, "coverage_cells": cells}))
    kinds = [type(part) for part in section.parts]
    assert kinds == [Text, Chart, Table]
    chart = section.parts[1]
    assert isinstance(chart, Chart) and isinstance(chart.plot, bytes)
    assert chart.plot.startswith(b"\x89PNG")


def test_without_coverage_the_section_is_one_sentence() -> None:
    empty = pa.table({"campaign": pa.array([], pa.string())})
    for tables in ({}, {"coverage_curve": empty, "coverage_cells": empty}):
        section = coverage_section(_data(tables))
        (said,) = section.parts
        assert isinstance(said, Text) and "No campaign here measured" in said.text
