"""A campaign as a pytest session (`pytest scenarios --lab-campaign 30m -n auto`): the same
tasks, records and failure database as `lab campaign`, scheduled by pytest-xdist instead
of the campaign's own pool.

    session = CampaignSession(request, out_dir, db, deadline)
    session.tasks(cap, ids)   the open failures named first, then up to `cap` draws
    session.run(task)         its records (a failure: replayed until it shows again, up to
                              FIXED_AFTER times); pytest skips a task that cannot end in time
    session.summary()         campaign.json from every record written so far

The guide (`--lab-campaign-guide`) is shared by every xdist worker through the campaign
folder: under a lock on `guide.lock`, a worker brings its own copy of the guide up to date
with guide.jsonl (what the others proposed and observed, in that order), then proposes its
run, or observes it, and logs that. The decisions follow guide.jsonl's order, as in
`lab campaign`, so `lab.campaign.guide_files.replay` makes them again from the log.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any

from lab.campaign.campaign import estimate_s, open_failures
from lab.campaign.failures import FIXED_AFTER, FailureDB
from lab.campaign.guide import Guide, make_guide
from lab.campaign.guide_files import GuideFiles, replay
from lab.campaign.plan import CampaignRequest, Cell, Draw
from lab.campaign.summary import CampaignSummary, write_campaign
from lab.campaign.tasks import RunRecord, Task, run_task

__all__ = ["CampaignSession", "OutOfBudget"]


class OutOfBudget(Exception):
    """The task's run could not end inside the campaign's budget."""


# This process's copy of each campaign's guide, and how many lines of guide.jsonl it has seen.
_GUIDES: dict[Path, tuple[Guide, int]] = {}


@dataclass(frozen=True)
class CampaignSession:
    request: CampaignRequest
    out_dir: Path
    db: FailureDB
    deadline: float  # time.time() when the budget ends

    def open_failure_ids(self) -> list[str]:
        cells, _ = self.request.cells()
        return [f.id for f in open_failures(self.db, self.request, cells)]

    def tasks(self, cap: int, failure_ids: list[str]) -> list[Task]:
        """The failures named (the controller's snapshot, so every xdist worker collects
        the same tests), then `cap` draws."""
        cells, _ = self.request.cells()
        hosts = self.request.hosts_file
        failures = [self.db.get(fid) for fid in failure_ids]
        replays = [
            Task(n, Cell(f.scenario, f.target, f.backend, f.mode), f.seed, f, hosts)
            for n, f in enumerate(failures, start=1)
        ]
        draws = [
            Task(len(replays) + d.number, d.cell, d.seed, hosts_file=hosts)
            for d in islice(self.request.draws(cells), cap)
        ]
        return replays + draws

    def _fits(self, cell: Cell) -> bool:
        return time.time() + estimate_s(cell, self.request.hosts_file) <= self.deadline

    @contextlib.contextmanager
    def _guide(self) -> Iterator[tuple[Guide, GuideFiles]]:
        """The guide, up to date with guide.jsonl, held by this worker alone meanwhile."""
        files = GuideFiles(self.out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        with (self.out_dir / "guide.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                request = self.request
                guide, seen = _GUIDES.get(self.out_dir) or (
                    make_guide(request.guide, request.seed, request.shard),
                    0,
                )
                replay(guide, files.read_log(skip=seen))
                yield guide, files
                _GUIDES[self.out_dir] = (guide, len(files.read_log()))
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _settled(self, record: RunRecord) -> RunRecord:
        with self._guide() as (guide, files):
            files.observed(guide, record)
        return record

    def run(self, task: Task) -> list[RunRecord]:
        if not self._fits(task.cell):
            raise OutOfBudget(f"{task.cell}: the campaign's budget is spent")
        if task.failure is None:
            with self._guide() as (guide, files):
                draw = Draw(task.number, task.cell, task.seed)
                made = files.proposed(guide.propose(task.number, draw))
                task = replace(made, hosts_file=task.hosts_file)
            return [self._settled(run_task(task, self.out_dir, self.db))]
        records: list[RunRecord] = []
        for attempt in range(FIXED_AFTER):
            if attempt and not self._fits(task.cell):
                break
            number = task.number * 100 + attempt  # one record file per replay
            replayed = Task(number, task.cell, task.seed, task.failure, task.hosts_file)
            record = self._settled(run_task(replayed, self.out_dir, self.db))
            records.append(record)
            if record.reproduced:
                break
        return records

    def summary(self) -> CampaignSummary:
        """campaign.json made from the records every worker wrote."""
        cells, skipped = self.request.cells()
        summary = CampaignSummary.begin(self.request, cells, skipped)
        paths = sorted((self.out_dir / "records").glob("*.json"), key=lambda p: int(p.stem))
        for path in paths:
            summary = summary.with_record(RunRecord.from_json(_read(path)))
        with self._guide() as (guide, files):
            stats = guide.stats()
            summary = replace(summary, coverage=tuple(files.points()))
        summary = summary.finished(self.db, stats)
        began = self.deadline - self.request.budget_s
        summary = replace(summary, elapsed_s=round(time.time() - began, 1))
        write_campaign(self.out_dir, summary)
        return summary


def _read(path: Path) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return raw
