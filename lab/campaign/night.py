"""One night of a sharded nightly campaign, in the steps a CI workflow runs (`lab nightly`):

    plan = plan_night(request, shards=4)      the night decided before any shard starts: one
                                              seed for every shard (the UTC date unless
                                              given), the shards, the backends; every name
                                              checked (NightPlan.outputs(): key=value lines)
    night = merge_night(downloads, out, db)   the shards' artifacts, downloaded side by side
                                              (`campaign-*` folders, `failures-*` databases),
                                              joined: one campaign folder, one database

A shard that broke off before its end leaves a campaign folder without campaign.json: it is
named in `NightMerge.incomplete` and left out; its failure database is still joined, since
every failure it recorded was recorded as it happened.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from lab.campaign.failure_import import ImportedRecord, merge_records, read_records
from lab.campaign.failures import FailureDB
from lab.campaign.merge import merge_campaigns
from lab.campaign.plan import CampaignRequest, Cell
from lab.campaign.summary import CampaignSummary, read_campaign
from lab.ground.errors import UsageError

__all__ = [
    "CAMPAIGN_ARTIFACTS",
    "FAILURE_ARTIFACTS",
    "MAX_SHARDS",
    "NightMerge",
    "NightPlan",
    "merge_night",
    "plan_night",
]

MAX_SHARDS = 16
CAMPAIGN_ARTIFACTS = "campaign-*"  # a shard's campaign folder, as the workflow names it
FAILURE_ARTIFACTS = "failures-*"  # a shard's failure database


@dataclass(frozen=True)
class NightPlan:
    seed: int
    shards: int
    backends: tuple[str, ...]
    cells: tuple[Cell, ...]
    skipped: tuple[str, ...]
    allure_cli: str  # the Allure command line's version (a CI cache key)
    toxiproxy: str  # the Toxiproxy server's version, for a CI job to build

    def outputs(self) -> list[tuple[str, str]]:
        """What the workflow's later jobs take from the plan, as (key, value)."""
        return [
            ("seed", str(self.seed)),
            ("count", str(self.shards)),
            ("shards", json.dumps(list(range(1, self.shards + 1)), separators=(",", ":"))),
            ("backends", json.dumps(list(self.backends), separators=(",", ":"))),
            ("allure-cli", self.allure_cli),
            ("toxiproxy", self.toxiproxy),
        ]


def plan_night(request: CampaignRequest, shards: int, allure_cli: str, toxiproxy: str) -> NightPlan:
    """The night as `request` (its seed the night's) split into `shards` shards."""
    if not 1 <= shards <= MAX_SHARDS:
        raise UsageError(f"--shards {shards}: give a number of shards from 1 to {MAX_SHARDS}")
    cells, skipped = request.cells()  # every name checked; a night that can run nothing refused
    backends = tuple(b for b in request.backends if any(c.backend == b for c in cells))
    return NightPlan(request.seed, shards, backends, cells, skipped, allure_cli, toxiproxy)


@dataclass(frozen=True)
class NightMerge:
    summary: CampaignSummary | None  # None when no shard left a whole campaign folder
    merged: tuple[Path, ...]
    incomplete: tuple[Path, ...]
    failures: tuple[ImportedRecord, ...]

    def outputs(self) -> list[tuple[str, str]]:
        new = 0 if self.summary is None else len(self.summary.new_failures)
        return [("merged", str(self.summary is not None).lower()), ("new-failures", str(new))]


def merge_night(downloads: Path, out_dir: Path, db: FailureDB) -> NightMerge:
    """Join the shards' failure databases into `db`, then their campaign folders into
    `out_dir` (a new folder). Every campaign folder is read before anything is written."""
    if not downloads.is_dir():
        raise UsageError(f"{downloads}: no such folder (the shards' downloaded artifacts)")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise UsageError(f"{out_dir} exists and is not empty: merge into a new folder")
    folders = sorted(p for p in downloads.glob(CAMPAIGN_ARTIFACTS) if p.is_dir())
    whole = tuple(p for p in folders if (p / "campaign.json").is_file())
    incomplete = tuple(p for p in folders if p not in whole)
    for folder in whole:
        read_campaign(folder)  # a damaged one refused before the database is touched
    databases = [p for p in sorted(downloads.glob(FAILURE_ARTIFACTS)) if any(p.glob("*.json"))]
    records = read_records(databases)
    list(db)  # a database that is not one is refused before anything is written
    changes = merge_records(db, records)
    summary = merge_campaigns(list(whole), out_dir) if whole else None
    return NightMerge(summary, whole, incomplete, tuple(changes))
