"""What a campaign is asked to do, parsed and checked at the entry point, and the runs it
draws: cells (scenario × target × backend × mode) in turn, each with a fresh seed from the
campaign's own seed, so the runs of a campaign — and of each of its shards — are decided
before any starts.

    request = CampaignRequest(budget_s=1800, scenarios=("random",), …)
    cells, skipped = request.cells()          # what can run, and why the rest cannot
    for draw in request.draws(cells): …       # Draw(number, cell, seed), this shard's only

`--shard I/N` keeps the draws whose number is I modulo N (numbers from 1), so N machines
given the same campaign seed run disjoint slices of one sequence.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path

from lab.compose import parts_for
from lab.ground.cluster_settings import MODES
from lab.ground.errors import UsageError
from lab.ground.spec import BACKENDS
from lab.ground.spec_words import MAX_SEED, split_target
from lab.targets.catalog import target_names
from lab.targets.suite import refusal_check
from scenarios.catalog import runnable_names, scenario_named

__all__ = ["GUIDES", "CampaignRequest", "Cell", "Draw", "Shard", "nightly_seed", "parse_budget"]

# What makes a run of each draw: `random`, the draw's seed as `lab run` runs it; `coverage`,
# fresh draws and mutations steered by the behaviours runs reach (lab.campaign.guide).
GUIDES = ("random", "coverage")

_BUDGET = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_budget(text: str) -> float:
    """`30m`, `90s`, `1h`, `1h30m` (or plain seconds) as seconds; at least 10 s."""
    text = text.strip().lower()
    if text.replace(".", "", 1).isdigit():
        seconds = float(text)
    else:
        found = _BUDGET.match(text)
        if found is None or not any(found.groups()):
            raise UsageError(f"bad budget {text!r}: write it as 30m, 90s, 1h or 1h30m")
        hours, minutes, secs = (int(g or 0) for g in found.groups())
        seconds = float(hours * 3600 + minutes * 60 + secs)
    if seconds < 10:
        raise UsageError(f"budget {text!r} is too short: a run takes longer than that")
    return seconds


@dataclass(frozen=True)
class Shard:
    index: int  # 1 … count
    count: int

    @staticmethod
    def parse(text: str) -> Shard:
        try:
            index, total = (int(part) for part in text.split("/"))
        except ValueError:
            raise UsageError(f"bad shard {text!r}: write it as I/N, e.g. 2/4") from None
        if not 1 <= index <= total:
            raise UsageError(f"bad shard {text!r}: I must be between 1 and N")
        return Shard(index, total)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class Cell:
    """What one run of a campaign runs: a scenario on a target and backend, in a mode."""

    scenario: str
    target: str  # NAME or NAME@VERSION (lab.targets.catalog)
    backend: str
    mode: str
    # The target's own settings every run of the cell is given (`--target-setting`).
    settings: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        given = "".join(f" {k}={v}" for k, v in self.settings)
        return f"{self.scenario} · {self.target}{given} · {self.backend} · {self.mode}"


@dataclass(frozen=True)
class Draw:
    number: int  # its place in the campaign's sequence, from 1
    cell: Cell
    seed: int


def nightly_seed(today: dt.date | None = None) -> int:
    """The default seed of a sharded campaign: the UTC date, so every shard of one night
    agrees without being told (yyyymmdd)."""
    day = today or dt.datetime.now(dt.UTC).date()
    return int(day.strftime("%Y%m%d"))


def _names(given: tuple[str, ...], known: tuple[str, ...] | list[str], what: str) -> None:
    for name in given:
        if name not in known:
            raise UsageError(f"unknown {what} {name!r} (known: {', '.join(sorted(known))})")


@dataclass(frozen=True)
class CampaignRequest:
    """Every choice of `lab campaign`, checked when made. `modes` empty: each scenario in
    its own mode; `jobs` runs at once on this machine; `stop_at_broken`: the campaign ends
    at its first broken run (the runs still going are interrupted)."""

    budget_s: float
    seed: int
    scenarios: tuple[str, ...] = ("random",)
    targets: tuple[str, ...] = ("broker_ref",)
    backends: tuple[str, ...] = ("process",)
    modes: tuple[str, ...] = ()
    jobs: int = 1
    shard: Shard = Shard(1, 1)
    hosts_file: Path | None = None  # the hosts backend's (--backends ssh)
    stop_at_broken: bool = False
    guide: str = "random"  # what makes each run of a draw (lab.campaign.guide)
    settings: tuple[tuple[str, str], ...] = ()  # the targets' own (`--target-setting`)

    def __post_init__(self) -> None:
        if not self.scenarios or not self.targets or not self.backends:
            raise UsageError("a campaign needs at least one scenario, target and backend")
        _names(self.scenarios, runnable_names(), "scenario")
        _names(tuple(split_target(t)[0] for t in self.targets), target_names(), "target")
        _names(self.backends, list(BACKENDS), "backend")
        for name in self.scenarios:
            if scenario_named(name).needs_spec:  # an entry point's, known once it is loaded
                raise UsageError(f"scenario {name!r} runs an incident file, not a seed")
        _names(self.modes, list(MODES), "mode")
        if self.jobs < 1:
            raise UsageError(f"--jobs {self.jobs}: at least one run at a time")
        if "ssh" in self.backends and self.jobs > 1:
            raise UsageError(
                "--backends ssh runs one run at a time (runs side by side on the same hosts "
                "would cut and shape each other's links): --jobs 1"
            )
        if not 0 <= self.seed <= MAX_SEED:
            raise UsageError(f"bad campaign seed {self.seed}")
        if self.guide not in GUIDES:
            raise UsageError(f"unknown guide {self.guide!r} (known: {', '.join(GUIDES)})")

    def cells(self) -> tuple[tuple[Cell, ...], tuple[str, ...]]:
        """The cells that can run, in a fixed order, and a line for each that cannot."""
        runnable: list[Cell] = []
        skipped: list[str] = []
        for scenario in self.scenarios:
            own = scenario_named(scenario)
            for mode in self.modes or (None,):
                for target in self.targets:
                    for backend in self.backends:
                        # no mode given: the scenario's own, or the one the target runs
                        given = self.settings
                        cell = Cell(scenario, target, backend, mode or own.mode, given)
                        try:
                            hosts = self.hosts_file if backend == "ssh" else None
                            parts = parts_for(scenario, backend, target, mode, hosts)
                            cell = Cell(scenario, target, backend, parts.scenario.mode, given)
                            probe = parts.scenario.spec(0, backend=backend, target=parts.target)
                            probe = probe.with_target_settings(dict(given))
                            refusal_check(probe, parts, Path(tempfile.gettempdir()) / "lab-probe")
                        except UsageError as exc:
                            skipped.append(f"{cell}: {exc}")
                            continue
                        runnable.append(cell)
        if not runnable:
            raise UsageError("nothing to run: " + "; ".join(skipped))
        return tuple(runnable), tuple(skipped)

    def draws(self, cells: tuple[Cell, ...]) -> Iterator[Draw]:
        """This shard's draws, without end: cells in turn, a fresh seed each."""
        rng = random.Random(self.seed)
        for number in count(1):
            cell = cells[(number - 1) % len(cells)]
            seed = rng.randrange(MAX_SEED)
            if (number - 1) % self.shard.count == self.shard.index - 1:
                yield Draw(number, cell, seed)
