"""`lab campaign`: runs in a time budget, `jobs` at once, recorded failures first.

    summary = run_campaign(request, out_dir, db, show)

First every open failure of the database that this campaign's cells and shard cover is
replayed, up to FIXED_AFTER times, stopping at the first reproduction; then fresh draws
(lab.campaign.plan) until the next one could not end inside the budget: a run is started
only when its estimated length (its cell's longest run so far, or the scenario's load plus
a start-and-stop allowance) fits in the time left. Runs still going a grace period past
the budget are interrupted (they heal and stop as on Ctrl-C). Ctrl-C stops the campaign
the same way, and campaign.json says what finished. With `stop_at_broken` the campaign ends
at its first broken run: nothing more starts, and runs still going are interrupted.

What each draw runs is the guide's (lab.campaign.guide, `--guide`): its seed as `lab run`
runs it (`random`), or a fresh draw or a mutation steered by the behaviours runs reach
(`coverage`). Either way every run's behaviours are measured as it is recorded, into
coverage.jsonl (lab.campaign.guide_files).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from lab.campaign.failures import FIXED_AFTER, Failure, FailureDB
from lab.campaign.guide import make_guide
from lab.campaign.guide_files import GuideFiles
from lab.campaign.plan import CampaignRequest, Cell, Draw
from lab.campaign.summary import CampaignSummary, write_campaign
from lab.campaign.tasks import RunningTask, RunRecord, Task, settle
from lab.campaign.warm import wait_any, warm_up
from lab.compose import parts_for

__all__ = ["estimate_s", "open_failures", "run_campaign"]

GRACE_S = 60.0  # how long past the budget a run may go on before it is interrupted
_START_STOP_S = {"process": 12.0, "docker": 35.0, "ssh": 20.0}
_JVM_S = 30.0  # a JVM target's nodes take longer to start and stop


def estimate_s(cell: Cell, hosts_file: Path | None = None) -> float:
    """A first guess at a run's length: its load, its target's restart allowance, and a
    start-and-stop allowance by backend and target."""
    hosts = hosts_file if cell.backend == "ssh" else None
    parts = parts_for(cell.scenario, cell.backend, cell.target, cell.mode, hosts)
    scenario = parts.scenario
    faults = len(scenario.spec(0).schedule) // 2 if scenario.paced else 1
    load = scenario.load_s(parts.target.restart_allowance_s, faults)
    # A target whose nodes restart slower than broker_ref's (a JVM) starts and stops slower.
    extra = _JVM_S if parts.target.restart_allowance_s else 0.0
    return load + _START_STOP_S.get(cell.backend, 35.0) + extra


def open_failures(
    db: FailureDB, request: CampaignRequest, cells: tuple[Cell, ...]
) -> list[Failure]:
    """The failures this campaign replays: not fixed, in one of its cells, in its shard."""
    wanted = set(cells)
    shard = request.shard
    return [
        f
        for f in db
        if f.status != "fixed"
        and Cell(f.scenario, f.target, f.backend, f.mode) in wanted
        and int(f.id, 16) % shard.count == shard.index - 1
    ]


class _Schedule:
    """Which task comes next: failure replays first, then the draws."""

    def __init__(
        self,
        failures: list[Failure],
        draws: Iterator[Draw],
        make_task: Callable[[int, Draw], Task],
        hosts_file: Path | None = None,
    ) -> None:
        self.hosts_file = hosts_file
        self.replays: deque[Failure] = deque(failures)
        self.tries: dict[str, int] = {}
        self.draws = draws
        self.make_task = make_task  # what a draw runs (the guide's proposal)
        self.replaying: set[str] = set()
        self.numbers = 0
        self.drawing = True

    def next(self, fits: Callable[[Cell], bool]) -> Task | None:
        for _ in range(len(self.replays)):
            failure = self.replays.popleft()
            if failure.id in self.replaying:
                self.replays.append(failure)
                continue
            cell = Cell(failure.scenario, failure.target, failure.backend, failure.mode)
            if not fits(cell):
                continue  # undecided this time: it does not fit in what is left
            self.replaying.add(failure.id)
            self.tries[failure.id] = self.tries.get(failure.id, 0) + 1
            self.numbers += 1
            return Task(self.numbers, cell, failure.seed, failure, self.hosts_file)
        if not self.drawing:
            return None
        draw = next(self.draws)
        if not fits(draw.cell):
            self.drawing = False  # the budget is spent: no run starts that cannot end in it
            return None
        self.numbers += 1
        return replace(self.make_task(self.numbers, draw), hosts_file=self.hosts_file)

    def stop(self) -> None:
        """Nothing more starts (a campaign that stops at its first broken run)."""
        self.replays.clear()
        self.drawing = False

    def replayed(self, failure: Failure, record: RunRecord) -> None:
        self.replaying.discard(failure.id)
        if not record.reproduced and self.tries[failure.id] < FIXED_AFTER:
            self.replays.appendleft(failure)  # not back yet: again, up to FIXED_AFTER times

    @property
    def done(self) -> bool:
        return not self.replays and not self.drawing


def run_campaign(
    request: CampaignRequest,
    out_dir: Path,
    db: FailureDB,
    show: Callable[[CampaignSummary, str | None], None],
) -> CampaignSummary:
    """Run the campaign into `out_dir`; `show(summary, line)` after every change."""
    cells, skipped = request.cells()
    failures = open_failures(db, request, cells)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = CampaignSummary.begin(request, cells, skipped)
    guide = make_guide(request.guide, request.seed, request.shard)
    files = GuideFiles(out_dir)
    schedule = _Schedule(
        failures,
        request.draws(cells),
        lambda n, draw: files.proposed(guide.propose(n, draw)),
        request.hosts_file,
    )
    longest: dict[Cell, float] = {}
    running: list[RunningTask] = []
    deadline = time.monotonic() + request.budget_s

    def fits(cell: Cell) -> bool:
        needed = longest.get(cell) or estimate_s(cell, request.hosts_file)
        return time.monotonic() + needed <= deadline

    write_campaign(out_dir, summary)
    warm_up()
    try:
        while True:
            while len(running) < request.jobs:
                task = schedule.next(fits)
                if task is None:
                    break
                running.append(RunningTask(task, out_dir))
                show(summary.with_running(len(running), deadline), None)
            if not running:
                break
            for job in list(running):
                record = job.poll()
                if record is None:
                    continue
                running.remove(job)
                record = settle(record, job.task, out_dir, db)
                if job.task.failure is not None:
                    schedule.replayed(job.task.failure, record)
                longest[record.cell] = max(longest.get(record.cell, 0.0), record.seconds)
                summary = summary.with_record(record, files.observed(guide, record))
                summary = summary.with_running(len(running), deadline)
                write_campaign(out_dir, summary)
                show(summary, summary.line(record))
                if request.stop_at_broken and record.verdict == "broken":
                    schedule.stop()
                    for other in running:
                        other.interrupt()
            if time.monotonic() > deadline + GRACE_S:
                for job in running:
                    job.interrupt()
            show(summary.with_running(len(running), deadline), None)
            wait_any([job.proc for job in running], 0.2)  # at once when a run ends
    except BaseException:
        for job in _stop_all(running):
            record = job.poll()
            if record is not None:
                record = settle(record, job.task, out_dir, db)
                summary = summary.with_record(record, files.observed(guide, record))
        raise
    finally:
        summary = summary.finished(db, guide.stats())
        write_campaign(out_dir, summary)
    return summary


def _stop_all(running: list[RunningTask]) -> list[RunningTask]:
    """Interrupt every run (each heals and stops), then kill what is left after a minute."""
    for job in running:
        job.interrupt()
    deadline = time.monotonic() + GRACE_S
    for job in running:
        while job.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        job.kill()
    return running
