"""detection: how good the lab's campaigns are at finding bugs, measured on the bug zoo.

For each bug (lab.bench.zoo) a scratch copy of the tree gets the bug (lab.bench.scratch),
and for each generator and trial its own `lab` runs a campaign of `random` in the bug's HA
design, with a fixed budget, that stops at its first broken run (`--stop-at-first-broken`),
its failure database apart. Trial k has the same campaign seed for every bug and generator.
A cell is found when its campaign broke; its time to detection runs from the campaign
command's start to the end of that run. For each bug and generator, the first broken run
found is then given to `lab shrink`. With `--named` every bug also meets the named scenarios
of its design (J1–J13 or C1–C8, seed 1), and the tree without a bug meets them too, so a
scenario that fails anyway is seen as such; `--control` runs the same campaigns on the tree
without a bug. The product's tree is never changed: the copies live in a scratch root that
is removed at the end (and by the next `lab` command if the benchmark was killed).

Each campaign (and each named run against a bug) has a canary log of its own, from which its
trial reads when the bug was first reached and triggered (lab.bench.detection_canary). Every
trial, shrink and named run is appended to the store as it ends (lab.bench.detection_store),
stamped with the generator's version; `--page` is made from the store's trials of that
version (lab.bench.detection_page), and `--from-store` makes it without running anything.

The figure: the table bug × generator (found k/trials, median minutes and runs to
detection, the shrink, reached / triggered / detected), the throughput, then the headline, e.g.

    detection: random 7/13 found, median 3.1 min; coverage 12/13, median 1.2 min (2.6x) (…)
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from types import FrameType

from lab.bench._base import Benchmark, Say
from lab.bench.detection_canary import read_canary_log
from lab.bench.detection_jobs import Job, JobPool, Progress
from lab.bench.detection_pace import pace_line, paces
from lab.bench.detection_request import DetectionRequest
from lab.bench.detection_results import (
    CellResult,
    NamedResult,
    ShrinkResult,
    cell_of_campaign,
    named_of_run,
    shrink_of,
)
from lab.bench.detection_store import Stamp, TrialStore, latest_budget, select
from lab.bench.detection_table import headline, named_summary, table
from lab.bench.detection_version import generator_version, lab_commit
from lab.bench.scratch import ScratchRoot, Tree
from lab.bench.zoo import Bug, bugs_named, load_zoo
from lab.ground.errors import UsageError
from lab.ground.machine import this_machine

__all__ = ["BENCHMARK", "campaign_key", "list_zoo", "named_scenarios", "run_detection"]

_ID = re.compile(r"^([JC])(\d+)\b")
_SLACK_S = 90.0  # a campaign's start, its last run past the budget, its stop
NAMED_SEED = 1


def named_scenarios(design: str) -> list[tuple[str, str]]:
    """(id, scenario) of the named scenarios of a design: those whose summary begins with
    their id in the seeds' situations (J1 … J13, C1 … C8), in id order."""
    from scenarios.catalog import RUNNABLE

    found: list[tuple[str, int, str]] = []
    for name, scenario in RUNNABLE.items():
        match = _ID.match(scenario.summary)
        if match and scenario.mode == design:
            found.append((match.group(1), int(match.group(2)), name))
    return [(f"{letter}{number}", name) for letter, number, name in sorted(found)]


def campaign_key(bug: Bug | None, design: str, generator: str, trial: int) -> str:
    """A campaign's folder (and failure database, canary log) name: the bug's, or for the
    tree without a bug its design's too, since the controls of both designs may run at once."""
    name = bug.name if bug else f"no-bug-{design}"
    return f"{name}-{generator}-{trial}"


def list_zoo(bugs: Sequence[Bug]) -> list[str]:
    """One line a bug, its name first."""
    width = max(len(b.name) for b in bugs)
    return [
        f"{b.name:<{width}}  {b.design:<16}  expects {', '.join(b.expect)}"
        f"{' (cheap)' if b.cheap else ''}"
        for b in bugs
    ]


class _Detection:
    """One benchmark: its jobs, and what they found."""

    def __init__(
        self,
        request: DetectionRequest,
        root: ScratchRoot,
        pool: JobPool,
        store: TrialStore,
        stamp: Stamp,
    ) -> None:
        self.request = request
        self.root = root
        self.pool = pool
        self.store = store
        self.stamp = stamp
        self.cells: list[CellResult] = []
        self.shrinks: list[ShrinkResult] = []
        self.named: list[NamedResult] = []
        self._pending: dict[tuple[str, str], int] = {}  # (bug, generator): trials left

    def campaign(
        self, tree: Tree, bug: Bug | None, design: str, generator: str, trial: int, seed: int
    ) -> None:
        name = bug.name if bug else "no-bug"
        key = campaign_key(bug, design, generator, trial)
        out = self.root.path / "campaigns" / key
        args = [
            *("campaign", "--budget", f"{self.request.budget_s:g}", "--scenarios", "random"),
            *("--mode", design, "--seed", str(seed), "--jobs", "1", "--stop-at-first-broken"),
            *("--no-report", "--out", str(out)),
            *("--failures-dir", str(self.root.path / "failures" / key)),
        ]
        if generator != "random":
            args += ["--guide", generator]
        job = Job(f"{name} · {generator} · trial {trial}", tree, tuple(args), 0.0, lambda *a: None)
        job.canary_log = self.root.path / "canaries" / f"{key}.jsonl"
        job.canary_log.parent.mkdir(parents=True, exist_ok=True)

        def done(code: int, stdout: str, stderr: str) -> None:
            assert job.began is not None
            self._campaign_done(job, code, stderr, out, bug, design, generator, trial, seed)

        job.done = done
        job.estimate_s = self.request.budget_s + _SLACK_S
        if bug is not None:
            self._pending[(bug.name, generator)] = self._pending.get((bug.name, generator), 0) + 1
        self.pool.submit(job)

    def _campaign_done(
        self,
        job: Job,
        code: int,
        stderr: str,
        out: Path,
        bug: Bug | None,
        design: str,
        generator: str,
        trial: int,
        seed: int,
    ) -> None:
        assert job.began is not None
        try:
            campaign = json.loads((out / "campaign.json").read_text(encoding="utf-8"))
            cell = cell_of_campaign(
                campaign,
                job.began,
                bug=bug.name if bug else None,
                design=design,
                generator=generator,
                trial=trial,
                seed=seed,
                campaign_dir=out,
            )
        except (OSError, ValueError) as exc:
            said = [x for x in stderr.splitlines() if x.startswith("lab:")]
            why = said[-1] if said else f"exit status {code}: {exc}"
            cell = CellResult(
                bug.name if bug else None,
                design,
                generator,
                trial,
                seed,
                False,
                0,
                None,
                error=why,
            )
        seen = read_canary_log(job.canary_log, job.began) if job.canary_log else None
        cell = replace(
            cell,
            folder=str(out / cell.folder) if cell.folder is not None else None,
            canary=bool(bug and bug.canaries),
            reached=seen.reached if seen else None,
            triggered=seen.triggered if seen else None,
            after_generator=bool(bug and bug.after_generator),
            campaign_s=round(job.seconds, 2),
        )
        self.cells.append(cell)
        self.store.append(cell, self.stamp, bug.digest if bug else None)
        if bug is None:
            return
        self._pending[(bug.name, generator)] -= 1
        if self._pending[(bug.name, generator)] == 0:
            self._shrink_first(job.tree, bug, generator)

    def _shrink_first(self, tree: Tree, bug: Bug, generator: str) -> None:
        """`lab shrink` on the first broken run its trials found (the lowest trial's)."""
        found = sorted(
            (c for c in self.cells if c.bug == bug.name and c.generator == generator and c.found),
            key=lambda c: c.trial,
        )
        if not found or self.request.shrink_budget_s <= 0 or found[0].folder is None:
            return
        out = self.root.path / "shrinks" / f"{bug.name}-{generator}"
        args = (
            *("shrink", found[0].folder, "--budget", f"{self.request.shrink_budget_s:g}"),
            *("--tries", "1", "--out", str(out)),
        )

        def done(code: int, stdout: str, stderr: str) -> None:
            shrunk = shrink_of(bug.name, generator, code, out)
            self.shrinks.append(shrunk)
            self.store.append(shrunk, self.stamp, bug.digest)

        estimate = self.request.shrink_budget_s + _SLACK_S
        self.pool.submit(Job(f"{bug.name} · shrink", tree, args, estimate, done))

    def named_runs(self, tree: Tree, bug: Bug | None, design: str) -> None:
        name = bug.name if bug else "no-bug"
        for label, scenario in named_scenarios(design):
            runs = self.root.path / "named" / name
            args = ("run", scenario, "--seed", str(NAMED_SEED), "--runs-dir", str(runs))

            log = self.root.path / "canaries" / f"{name}-{label}.jsonl"
            job = Job(f"{name} · {label} {scenario}", tree, args, 120.0, lambda *a: None)
            if bug is not None and bug.canaries:
                log.parent.mkdir(parents=True, exist_ok=True)
                job.canary_log = log

            def done(
                code: int,
                stdout: str,
                stderr: str,
                label: str = label,
                scenario: str = scenario,
                job: Job = job,
            ) -> None:
                found = named_of_run(
                    bug.name if bug else None, scenario, label, code, stdout, stderr
                )
                if job.canary_log is not None and job.began is not None:
                    seen = read_canary_log(job.canary_log, job.began)
                    found = replace(
                        found,
                        reached=seen.reached is not None,
                        triggered=seen.triggered is not None,
                    )
                self.named.append(found)
                self.store.append(found, self.stamp, bug.digest if bug else None)

            job.done = done
            self.pool.submit(job)


def _machine() -> str:
    return f"{this_machine().describe()}; load average {os.getloadavg()[0]:.1f}"


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl-C and SIGTERM stop the benchmark the same way (its campaigns heal and stop, its
    scratch root is removed), also when it was started where SIGINT is ignored."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for sig in before:
        signal.signal(sig, stop)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def run_detection(say: Say, request: DetectionRequest) -> str:
    """Run the benchmark; the table and, last, the headline."""
    with _interruptible():
        return _run(say, request)


def _stamp(request: DetectionRequest) -> Stamp:
    from lab.bench.detection_page import command_of

    return Stamp(
        version=generator_version(),
        commit=lab_commit(),
        budget_s=request.budget_s,
        command=command_of(request),
        machine=this_machine().describe(),
    )


def page_from_store(say: Say, request: DetectionRequest) -> str:
    """Write the page from the store's trials of the current generator version (and of the
    request's budget, or without --budget of the latest stored trial's); its headline."""
    from lab.bench.detection_page import write_page

    assert request.page is not None
    zoo = load_zoo()
    version = generator_version()
    store = TrialStore(request.store)
    records = store.read()
    if request.from_store and not request.budget_set:
        budget_s = latest_budget(records, version)
        if budget_s is None:
            raise UsageError(
                f"--from-store: no trial of this generator version ({version}) in "
                f"{store.path}: run `lab bench detection` first"
            )
        request = replace(request, budget_s=budget_s)
    digests = {b.name: b.digest for b in zoo}
    after = {b.name: b.after_generator for b in zoo}
    selection = select(records, version, request.budget_s, digests, after)
    if request.from_store and not selection.cells and not selection.named:
        raise UsageError(
            f"--from-store: no trial of generator version {version} with "
            f"{request.budget_s / 60:g}-min campaigns in {store.path} "
            f"({selection.left_out_text()})"
        )
    made = write_page(request, selection, zoo, version, _machine())
    say(
        f"detection: page {request.page} from {len(selection.cells)} stored trial(s) of "
        f"generator version {version}, {request.budget_s / 60:g}-min campaigns "
        f"({selection.left_out_text()})"
    )
    return made.last


def _run(say: Say, request: DetectionRequest) -> str:
    if request.from_store:
        return page_from_store(say, request)
    bugs = bugs_named(load_zoo(), request.bugs)
    designs = sorted({b.design for b in bugs})
    store = TrialStore(request.store)
    store.check()
    stamp = _stamp(request)
    say(
        f"detection: {len(bugs)} bug(s), generators {', '.join(request.generators)}, "
        f"{request.trials} trial(s) of {request.budget_s / 60:g} min, {request.jobs} at once "
        f"({_machine()}); generator version {stamp.version}, store {store.path}"
    )
    progress = Progress()
    with ScratchRoot() as root:
        trees = {b.name: root.tree(b.name, b) for b in bugs}  # a stale bug stops us here
        clean = root.tree("no-bug") if request.named or request.control else None
        pool = JobPool(request.jobs, root.path / "logs", progress)
        detection = _Detection(request, root, pool, store, stamp)
        for bug in bugs:
            for generator in request.generators:
                for trial, seed in enumerate(request.seeds(), start=1):
                    detection.campaign(trees[bug.name], bug, bug.design, generator, trial, seed)
        if clean is not None and request.control:
            for design in designs:
                for generator in request.generators:
                    detection.campaign(clean, None, design, generator, 1, request.seed)
        if request.named:
            for bug in bugs:
                detection.named_runs(trees[bug.name], bug, bug.design)
            assert clean is not None
            for design in designs:
                detection.named_runs(clean, None, design)
        detection.pool.run()
    cells = sorted(detection.cells, key=lambda c: (c.bug is None, c.name, c.generator, c.trial))
    lines = table(cells, detection.shrinks, detection.named, request.generators)
    if cells:
        lines.append(pace_line(paces(cells, request.generators, request.budget_s)))
    if cells and detection.named:
        last = f"{headline(cells, request.generators, request.budget_s)}; "
        last += named_summary(detection.named)
    elif cells:
        last = headline(cells, request.generators, request.budget_s)
    else:
        last = f"detection: {named_summary(detection.named)}"
    if request.page is not None:
        page_from_store(say, request)
    return "\n".join([*lines, last])


BENCHMARK = Benchmark(
    name="detection",
    description="bugs of the zoo found per campaign budget, and the time to find each",
    run=lambda say: run_detection(say, DetectionRequest()),
)
