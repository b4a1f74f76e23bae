"""`lab shrink RUN`: the smallest schedule that still shows the run's violation, by delta
debugging over its fault windows.

A candidate schedule is kept when any of `tries` reruns shows one of the original's
violation kinds (lab.judge.result.ReplayOf). First the run itself is rerun (a violation
that does not come back cannot be shrunk: "did not reproduce"); then, in turn: windows
dropped (ddmin: halves, then quarters … then one at a time); overlapping windows moved
apart; each window halved while it still reproduces; the load cut to just after the last
heal; and roles replaced by the nodes they resolved to in the original run. Every rerun
is an ordinary run folder under `<out>/runs`; the smallest reproducing one is the result,
and `<out>/shrink.json` lists every candidate tried.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lab.campaign.windows import (
    Window,
    apart,
    halved,
    resolved_targets,
    schedule_of,
    windows_of,
    with_roles_resolved,
)
from lab.compose import parts_for
from lab.ground.errors import UsageError
from lab.ground.files import write_json
from lab.ground.spec import RunSpec
from lab.judge.prediction import Outcome
from lab.judge.result import ReplayOf
from lab.run.folder import RunFolder
from lab.run.incident import validate_spec
from lab.run.runner import run_scenario

__all__ = ["Rerun", "ShrinkResult", "shrink_run"]

SETTLE_S = 2.0  # the load goes on this long after the last heal


class _OutOfBudget(Exception):
    pass


@dataclass(frozen=True)
class Rerun:
    """What one rerun of a candidate showed."""

    verdict: Outcome
    violations: tuple[str, ...]
    folder: Path


Rerunner = Callable[[RunSpec], Rerun]


@dataclass(frozen=True)
class ShrinkResult:
    original: str
    violations: tuple[str, ...]
    reproduced: bool  # did the original violation come back at all
    best_folder: str | None
    ops_before: int
    ops_after: int
    seconds_before: float
    seconds_after: float
    reruns: int
    budget_spent: bool
    kept: tuple[str, ...]  # the windows of the smallest schedule
    tried: tuple[dict[str, Any], ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "original": self.original,
            "violations": list(self.violations),
            "reproduced": self.reproduced,
            "smallest": self.best_folder,
            "operations": [self.ops_before, self.ops_after],
            "load_s": [self.seconds_before, self.seconds_after],
            "reruns": self.reruns,
            "budget_spent": self.budget_spent,
            "kept": list(self.kept),
            "tried": list(self.tried),
        }


class _Shrinker:
    def __init__(
        self,
        folder: Path,
        budget_s: float,
        tries: int,
        out: Path,
        say: Callable[[str], None],
        rerun: Rerunner | None = None,
    ) -> None:
        source = RunFolder.open_existing(folder)
        self.spec = RunSpec.from_json(source.read_spec(), source.spec)
        self.original = ReplayOf.read(source.path)
        if self.original.verdict == "held":
            raise UsageError(f"{folder}: its prediction held; there is no violation to shrink")
        if self.original.violations == ("interrupted",):
            raise UsageError(f"{folder}: the run was interrupted; replay it before shrinking")
        self.parts = parts_for(
            self.spec.scenario, self.spec.backend, self.spec.target, self.spec.group.mode
        )
        self.resolved = resolved_targets(source.path)
        self.tries = tries
        self.say = say
        self.runs_dir = out / "runs"
        self.deadline = time.monotonic() + budget_s
        self.run_s = self.spec.workload.duration_s + 15.0  # until a rerun says otherwise
        self.reruns = 0
        self.tried: list[dict[str, Any]] = []
        self.best = windows_of(self.spec.schedule)
        self.best_load = self.spec.workload.duration_s
        self.best_folder: Path | None = None
        self.rerun = rerun or self._run

    def _run(self, spec: RunSpec) -> Rerun:
        outcome = run_scenario(spec, self.parts, self.runs_dir, replay_of=self.original)
        verdict = outcome.verdict
        return Rerun(verdict.outcome, verdict.violations, outcome.folder.path)

    def _spec(self, windows: Sequence[Window], load_s: float) -> RunSpec:
        workload = replace(self.spec.workload, duration_s=load_s)
        return replace(self.spec, schedule=schedule_of(windows), workload=workload)

    def reproduces(self, windows: Sequence[Window], load_s: float, what: str) -> bool:
        """Keep the candidate when a rerun shows the violation again."""
        spec = self._spec(windows, load_s)
        try:
            validate_spec(spec)
        except UsageError as exc:
            self.tried.append({"candidate": what, "skipped": str(exc)})
            return False
        for attempt in range(1, self.tries + 1):
            if time.monotonic() + self.run_s > self.deadline:
                raise _OutOfBudget
            began = time.monotonic()
            shown = self.rerun(spec)
            self.run_s = max(self.run_s * 0.5, time.monotonic() - began)
            self.reruns += 1
            again = self.original.reproduced(shown.verdict, shown.violations)
            self.tried.append(
                {
                    "candidate": what,
                    "windows": [str(w) for w in windows],
                    "load_s": load_s,
                    "attempt": attempt,
                    "verdict": shown.verdict,
                    "violations": list(shown.violations),
                    "reproduced": again,
                    "folder": str(shown.folder),
                }
            )
            self.say(
                f"shrink: {what}: {len(windows)} window(s), load {load_s:g} s, try {attempt}: "
                f"{shown.verdict} {', '.join(shown.violations)} — "
                f"{'kept' if again else 'not reproduced'}"
            )
            if again:
                self.best, self.best_load = list(windows), load_s
                self.best_folder = shown.folder
                return True
        return False

    # ---- the passes ---------------------------------------------------------------------

    def roles(self) -> None:
        resolved = with_roles_resolved(self.best, self.resolved)
        if resolved != self.best:
            self.reproduces(resolved, self.best_load, "roles resolved to nodes")

    def drop(self) -> None:
        """ddmin: drop a chunk of windows while the rest still reproduces."""
        chunks = 2
        while self.best:
            windows = self.best
            size = max(1, len(windows) // chunks)
            parts = [windows[i : i + size] for i in range(0, len(windows), size)]
            for part in parts:
                rest = [w for w in windows if w not in part]
                named = ", ".join(w.id for w in part)
                if self.reproduces(rest, self.best_load, f"without {named}"):
                    chunks = max(chunks - 1, 2)
                    break
            else:
                if size == 1:
                    return
                chunks = min(len(windows), chunks * 2)

    def move_apart(self) -> None:
        for index in range(len(self.best)):
            moved = apart(self.best, index)
            if moved is not None:
                self.reproduces(moved, self.best_load, f"{self.best[index].id} moved later")

    def shorten(self) -> None:
        for index in range(len(self.best)):
            while index < len(self.best):
                shorter = halved(self.best[index])
                if shorter is None:
                    break
                candidate = [shorter if i == index else w for i, w in enumerate(self.best)]
                if not self.reproduces(candidate, self.best_load, f"{shorter.id} halved"):
                    break

    def cut_load(self) -> None:
        ends = [w.end_s if w.end_s is not None else w.start_s for w in self.best]
        load = round(max(ends, default=0.0) + SETTLE_S, 3)
        if load < self.best_load:
            self.reproduces(self.best, load, f"load cut to {load:g} s")

    def run(self) -> bool:
        """False when the original violation never came back."""
        if not self.reproduces(self.best, self.best_load, "the run as recorded"):
            return False
        # Roles last: which node a role names differs from run to run (who wins the first
        # election), so a schedule of roles reproduces more surely while it is shrunk.
        for step in (self.drop, self.move_apart, self.shorten, self.cut_load, self.roles):
            step()
        return True


def shrink_run(
    folder: Path,
    *,
    budget_s: float,
    tries: int,
    out: Path,
    say: Callable[[str], None],
    rerun: Rerunner | None = None,
) -> ShrinkResult:
    """Shrink the run in `folder`; `rerun` runs a candidate spec (default: a real run into
    `<out>/runs`)."""
    if tries < 1:
        raise UsageError(f"--tries {tries}: at least one rerun per candidate")
    shrinker = _Shrinker(folder, budget_s, tries, out, say, rerun)
    before = len(shrinker.spec.schedule)
    spent = False
    reproduced = False
    try:
        reproduced = shrinker.run()
    except _OutOfBudget:
        spent = True
        reproduced = shrinker.best_folder is not None
    result = ShrinkResult(
        original=str(folder),
        violations=shrinker.original.violations,
        reproduced=reproduced,
        best_folder=None if shrinker.best_folder is None else str(shrinker.best_folder),
        ops_before=before,
        ops_after=len(schedule_of(shrinker.best)),
        seconds_before=shrinker.spec.workload.duration_s,
        seconds_after=shrinker.best_load,
        reruns=shrinker.reruns,
        budget_spent=spent,
        kept=tuple(str(w) for w in shrinker.best),
        tried=tuple(shrinker.tried),
    )
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "shrink.json", {"at": dt.datetime.now(dt.UTC).isoformat(), **result.to_json()})
    return result
