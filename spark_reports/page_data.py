"""What the report page is made from: the collected tables by name, and the facts that are
not tables (where the runs came from, the campaigns' campaign.json, the previous report).

The page is a sequence of sections, each made by a function of `PageData`
(`report_page.SECTIONS`): a new section is a function of these and an entry in that list;
its tables come from the job's frames (`campaign_job.CAMPAIGN_TABLES`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lab.ground.errors import UsageError
from spark_reports.campaign_facts import CampaignFacts
from spark_reports.failures_view import FAILING_COLUMNS
from spark_reports.html_page import Section

__all__ = [
    "REPORT_FACTS",
    "PageData",
    "PreviousReport",
    "ReportFacts",
    "SectionMaker",
    "read_previous",
    "report_facts_json",
]

REPORT_FACTS = "report.json"
"""Written beside report.html: when the report was made, from what, what failed."""


@dataclass(frozen=True)
class PreviousReport:
    """A report made before (`lab report … --previous DIR`): its folder, when it was made,
    and its failing runs (`failing_runs.parquet`)."""

    folder: str
    made: str | None
    failing: pa.Table


@dataclass(frozen=True)
class ReportFacts:
    runs_dirs: tuple[str, ...]
    made: str
    """UTC, when the report was made."""
    from_folders: int
    from_store: int
    trend_by: str
    p99_factor: float
    campaigns: tuple[CampaignFacts, ...] = ()
    outside: int = 0
    """Run folders in no campaign."""
    previous: PreviousReport | None = None


@dataclass(frozen=True)
class PageData:
    tables: Mapping[str, pa.Table]
    facts: ReportFacts


SectionMaker = Callable[[PageData], Section]


def read_previous(folder: Path) -> PreviousReport:
    """The report in `folder`, read before anything starts; `UsageError` naming the file
    when it is not a report this lab made (or one older than its failing runs table)."""
    path = folder / "failing_runs.parquet"
    if not folder.is_dir():
        raise UsageError(f"--previous {folder}: not a directory")
    try:
        failing = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise UsageError(f"--previous {folder}: cannot read {path} ({exc})") from None
    missing = [c for c in FAILING_COLUMNS if c not in failing.column_names]
    if missing:
        raise UsageError(f"{path}: not a failing runs table (no column {missing[0]!r})")
    made = None
    try:
        raw = json.loads((folder / REPORT_FACTS).read_text(encoding="utf-8"))
        made = str(raw["made"]) if isinstance(raw, dict) and "made" in raw else None
    except (OSError, ValueError):
        pass
    return PreviousReport(str(folder), made, failing.select(list(FAILING_COLUMNS)))


def report_facts_json(facts: ReportFacts, tables: Mapping[str, pa.Table]) -> dict[str, Any]:
    """report.json: `v`, when, from what, and the counts a later report or a script needs."""
    cells = tables["campaign"]
    return {
        "v": 1,
        "made": facts.made,
        "runs_dirs": list(facts.runs_dirs),
        "campaigns": [c.folder for c in facts.campaigns],
        "runs": sum(int(v or 0) for v in cells.column("runs").to_pylist()),
        "failing_runs": tables["failing_runs"].num_rows,
        "previous": None if facts.previous is None else facts.previous.folder,
    }
