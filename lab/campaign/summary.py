"""What a campaign asked and what it ran: campaign.json, the summary table, and the merge
of several campaign folders (the shards of one night) into one.

campaign.json (`v` 1): `request` (budget, seed, scenarios, targets, backends, modes, jobs,
shard, stop_at_broken, guide), `started`, `ended`, `elapsed_s`, `cells` and `skipped` (each with
its reason), `runs` (one record per run: number, kind fresh|replay, scenario, target, backend, mode,
seed, verdict, violations, seconds, folder relative to the campaign folder, error, the
failure it showed and whether that failure is new, for a replay whether it reproduced, and
`origin` and `parent`: how the guide made it), `replays` (per failure replayed: its id and
outcome — still failing, flaky, fixed, undecided), `counts`, `new_failures`, `coverage`
(distinct behaviours in all and by cell, and after each run: lab.campaign.coverage) and
`guide` (what the guide did: its corpus, and each arm's runs, runs that paid and discarded
candidates).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lab.campaign.coverage import CoveragePoint, coverage_lines
from lab.campaign.failures import FIXED_AFTER, FailureDB
from lab.campaign.plan import CampaignRequest, Cell
from lab.campaign.tasks import RunRecord
from lab.ground.errors import InputError
from lab.ground.files import read_user_document, user_folder, write_json

__all__ = ["CAMPAIGN_VERSION", "CampaignSummary", "read_campaign", "write_campaign"]

CAMPAIGN_VERSION = 1
VERDICTS = ("held", "broken", "unknown")


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _request_json(request: CampaignRequest) -> dict[str, Any]:
    return {
        "budget_s": request.budget_s,
        "seed": request.seed,
        "scenarios": list(request.scenarios),
        "targets": list(request.targets),
        "backends": list(request.backends),
        "modes": list(request.modes),
        "jobs": request.jobs,
        "shard": str(request.shard),
        "stop_at_broken": request.stop_at_broken,
        "guide": request.guide,
        **({"target_settings": dict(request.settings)} if request.settings else {}),
    }


def replay_outcome(records: list[RunRecord]) -> str:
    """A failure's replays in one campaign, in order, as one word."""
    if any(r.reproduced for r in records):
        return "still failing" if records[0].reproduced else "flaky"
    if len(records) >= FIXED_AFTER and all(r.verdict == "held" for r in records):
        return "fixed"
    return "undecided" if all(r.verdict == "held" for r in records) else "flaky"


@dataclass(frozen=True)
class CampaignSummary:
    request: dict[str, Any]
    started: str
    cells: tuple[dict[str, str], ...]
    skipped: tuple[str, ...]
    records: tuple[RunRecord, ...] = ()
    running: int = 0
    left_s: float = 0.0
    ended: str | None = None
    elapsed_s: float = 0.0
    statuses: dict[str, str] = field(default_factory=dict)  # failure id → status at the end
    began: float = field(default_factory=time.monotonic)
    coverage: tuple[CoveragePoint, ...] = ()  # after each run, in the order recorded
    guide: dict[str, Any] = field(default_factory=dict)  # the guide's own account

    @staticmethod
    def begin(
        request: CampaignRequest, cells: tuple[Cell, ...], skipped: tuple[str, ...]
    ) -> CampaignSummary:
        described = tuple(
            {"scenario": c.scenario, "target": c.target, "backend": c.backend, "mode": c.mode}
            for c in cells
        )
        return CampaignSummary(_request_json(request), _now(), described, skipped)

    def with_record(self, record: RunRecord, point: CoveragePoint | None = None) -> CampaignSummary:
        points = self.coverage if point is None else (*self.coverage, point)
        return replace(self, records=(*self.records, record), coverage=points)

    def with_running(self, running: int, deadline: float) -> CampaignSummary:
        return replace(self, running=running, left_s=max(0.0, deadline - time.monotonic()))

    def finished(
        self, db: FailureDB | None = None, guide: dict[str, Any] | None = None
    ) -> CampaignSummary:
        statuses = {}
        if db is not None:
            ids = {r.failure for r in self.records if r.failure}
            statuses = {f.id: f.status for f in db if f.id in ids}
        elapsed = round(time.monotonic() - self.began, 1)
        return replace(
            self,
            ended=_now(),
            elapsed_s=elapsed,
            running=0,
            statuses=statuses,
            guide=self.guide if guide is None else guide,
        )

    def counts(self) -> dict[str, int]:
        fresh = [r for r in self.records if r.kind == "fresh"]
        out = {"runs": len(fresh), **{v: sum(r.verdict == v for r in fresh) for v in VERDICTS}}
        out["replays"] = len(self.records) - len(fresh)
        return out

    @property
    def new_failures(self) -> tuple[RunRecord, ...]:
        return tuple(r for r in self.records if r.new_failure)

    def replays(self) -> dict[str, str]:
        """Each replayed failure's outcome in this campaign."""
        by_failure: dict[str, list[RunRecord]] = {}
        for record in self.records:
            if record.kind == "replay" and record.failure:
                by_failure.setdefault(record.failure, []).append(record)
        return {fid: replay_outcome(records) for fid, records in by_failure.items()}

    def line(self, record: RunRecord) -> str:
        kinds = f" ({', '.join(record.violations)})" if record.violations else ""
        what = "replay of " + str(record.failure) if record.kind == "replay" else "run"
        if record.kind == "fresh" and record.origin != "seed":
            what += f" ({record.origin}" + (f" of {record.parent})" if record.parent else ")")
        news = " — new failure" if record.new_failure else ""
        back = ""
        if record.reproduced is not None:
            back = " — reproduced" if record.reproduced else " — did not reproduce"
        return (
            f"[{record.number}] {what} {record.cell} seed={record.seed}: {record.verdict}"
            f"{kinds} in {record.seconds:.0f} s{news}{back}"
        )

    def status_line(self) -> str:
        c = self.counts()
        left = f"{int(self.left_s // 60)}:{int(self.left_s % 60):02d} left"
        return (
            f"campaign: {c['runs']} runs ({c['held']} held, {c['broken']} broken, "
            f"{c['unknown']} unknown), {c['replays']} replays · {self.running} running · {left}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "v": CAMPAIGN_VERSION,
            "request": self.request,
            "started": self.started,
            "ended": self.ended,
            "elapsed_s": self.elapsed_s,
            "cells": list(self.cells),
            "skipped": list(self.skipped),
            "runs": [r.to_json() for r in self.records],
            "replays": [
                {"failure": fid, "outcome": outcome, "status": self.statuses.get(fid)}
                for fid, outcome in self.replays().items()
            ],
            "counts": self.counts(),
            "new_failures": [r.failure for r in self.new_failures],
            "coverage": self.coverage_json(),
            "guide": self.guide,
        }

    def coverage_json(self) -> dict[str, Any]:
        cells: dict[str, int] = {}
        for point in self.coverage:
            cells[str(point.cell)] = point.cell_behaviours
        return {
            "behaviours": self.coverage[-1].behaviours if self.coverage else 0,
            "cells": cells,
            "after_runs": [[p.run, p.behaviours] for p in self.coverage],
        }

    def table(self, campaign_dir: Path | None = None) -> list[str]:
        """The summary: per cell, runs and verdicts; replays; new failures; coverage (the
        failing runs' schedules read from `campaign_dir`)."""
        rows: dict[str, list[RunRecord]] = {}
        for record in self.records:
            if record.kind == "fresh":
                rows.setdefault(str(record.cell), []).append(record)
        width = max((len(k) for k in rows), default=4)
        lines = [f"{'cell':<{width}}  runs  held  broken  unknown  mean s"]
        for cell, records in sorted(rows.items()):
            n = {v: sum(r.verdict == v for r in records) for v in VERDICTS}
            mean = sum(r.seconds for r in records) / len(records)
            lines.append(
                f"{cell:<{width}}  {len(records):>4}  {n['held']:>4}  {n['broken']:>6}  "
                f"{n['unknown']:>7}  {mean:>6.1f}"
            )
        if not rows:
            lines.append("(no run fitted in the budget)")
        for fid, outcome in sorted(self.replays().items()):
            lines.append(f"failure {fid}: {outcome}")
        for record in self.new_failures:
            lines.append(
                f"new failure {record.failure}: {record.cell} seed={record.seed} "
                f"{', '.join(record.violations)} — {record.folder}"
            )
        lines.extend(f"skipped {reason}" for reason in self.skipped)
        lines.extend(coverage_lines(self.coverage, self.records, campaign_dir))
        arms = self.guide.get("arms") or {}
        if arms:
            said = ", ".join(
                f"{arm} {a['paid']}/{a['runs']}"
                + (f" ({a['discarded']} discarded)" if a.get("discarded") else "")
                for arm, a in arms.items()
                if a["runs"] or a.get("discarded")
            )
            lines.append(
                f"guide: corpus of {self.guide.get('corpus', 0)} runs; paid/runs by arm: {said}"
            )
        return lines


def write_campaign(out_dir: Path, summary: CampaignSummary) -> None:
    write_json(out_dir / "campaign.json", summary.to_json())


def read_campaign(folder: Path) -> dict[str, Any]:
    """A campaign folder's campaign.json; InputError in one line naming what is wrong."""
    user_folder(folder, "campaign folder")
    path = folder / "campaign.json"
    raw = read_user_document(path, "campaign.json", kind="json")
    if raw.get("v") != CAMPAIGN_VERSION:
        raise InputError(f"{path}: not a campaign.json of version {CAMPAIGN_VERSION}")
    return raw


def records_of(raw: dict[str, Any]) -> Iterable[RunRecord]:
    return (RunRecord.from_json(r) for r in raw.get("runs", ()))
