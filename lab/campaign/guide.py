"""What a campaign runs next, and what it learns from each run: the campaign's generator.

    guide = make_guide("coverage", seed, shard)       or "random" (the default)
    proposal = guide.propose(number, draw)           the run to make of a draw
    observation = guide.observe(run, cell, behaviours, verdict, folder)

`random` (BlindGuide) runs each draw's seed as `lab run SCENARIO --seed N` does — today's
campaign — and only measures the behaviours each run reached.

`coverage` (CoverageGuide) spends the budget where new behaviour appears. For a cell of
`random`, each run is either a fresh draw (the seed's schedule, with a workload drawn too) or
a mutation (lab.campaign.mutations) of a corpus entry — a run that reached behaviour its cell
had not shown — chosen by a bandit over the arms (lab.campaign.bandit) rewarded by new
behaviour. A mutation is kept only when candidate_problem finds nothing (the spec checker,
the preflight, `random`'s rule, an affordable workload); otherwise it is discarded and
counted, and after MAX_TRIES the run is a fresh draw. Cells of other scenarios run their
seeds, as with `random`. Every guided run is an ordinary run of `random` with an explicit
schedule and workload in its spec.json (`lab replay FOLDER` repeats it).

Every choice comes from the guide's own `random.Random` (seeded by the campaign's seed and
shard) and the observations fed to it, so the same proposals and observations, in the same
order, make the same decisions: guide.jsonl records that order (`{"propose": …}` and
`{"observe": …}` lines), and `replay(guide, lines)` follows it again, checking each proposal.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from lab.campaign.bandit import Bandit
from lab.campaign.candidates import candidate_problem, seed_spec
from lab.campaign.coverage import Coverage, CoveragePoint, cell_json, cell_of
from lab.campaign.failures import failure_id
from lab.campaign.mutations import OPERATORS, mutate
from lab.campaign.plan import GUIDES, Cell, Draw, Shard
from lab.campaign.workloads import draw_workload
from lab.ground.errors import InputError, UsageError
from lab.ground.spec import RunSpec

__all__ = [
    "ARMS",
    "GUIDED_SCENARIOS",
    "GUIDES",
    "MAX_TRIES",
    "BlindGuide",
    "CoverageGuide",
    "Entry",
    "Guide",
    "Observation",
    "Proposal",
    "make_guide",
    "replay",
]

GUIDED_SCENARIOS = frozenset({"random"})  # whose rule a mutated schedule is checked against
ARMS = ("fresh", *OPERATORS)
MAX_TRIES = 12  # candidates of one operator tried before the run is a fresh draw
Check = Callable[[RunSpec], str | None]


@dataclass(frozen=True)
class Proposal:
    """A run to make: `origin` says how — `seed` (`lab run SCENARIO --seed`), `fresh` (the
    seed's schedule and a drawn workload), an operator's name (a mutation of run `parent`,
    spliced with run `other`) — and `spec` is what it runs (None: the seed's own)."""

    number: int
    cell: Cell
    seed: int
    origin: str
    spec: RunSpec | None = None
    parent: int | None = None
    other: int | None = None
    discarded: int = 0

    @property
    def digest(self) -> str:
        return "" if self.spec is None else failure_id(self.spec.to_json())

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.number,
            "cell": cell_json(self.cell),
            "seed": self.seed,
            "origin": self.origin,
            "parent": self.parent,
            "other": self.other,
            "discarded": self.discarded,
            "spec": self.digest,
        }


@dataclass(frozen=True)
class Entry:
    """A corpus entry: a run that reached behaviour its cell had not shown before."""

    run: int
    cell: Cell
    spec: RunSpec
    origin: str
    parent: int | None
    new: tuple[str, ...]
    folder: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "v": 1,
            "run": self.run,
            "cell": cell_json(self.cell),
            "origin": self.origin,
            "parent": self.parent,
            "folder": self.folder,
            "new": list(self.new),
            "spec": self.spec.to_json(),
        }


@dataclass(frozen=True)
class Observation:
    point: CoveragePoint
    entry: Entry | None = None  # the run joined the corpus


class Guide(Protocol):
    """A campaign's generator: proposes each run, observes what each run showed."""

    name: str
    coverage: Coverage

    def propose(self, number: int, draw: Draw) -> Proposal:
        """The run number `number` makes of `draw` (its cell and seed)."""
        ...

    def observe(
        self, run: int, cell: Cell, behaviours: frozenset[str], verdict: str, folder: str | None
    ) -> Observation:
        """What run `run` showed (a run it did not propose, such as a replay, too)."""
        ...

    def stats(self) -> dict[str, Any]:
        """What the guide did, for campaign.json."""
        ...


class BlindGuide:
    """Today's campaign: each draw's seed, as `lab run` runs it; coverage only measured."""

    name = "random"

    def __init__(self) -> None:
        self.coverage = Coverage()
        self.pending: dict[int, Proposal] = {}

    def propose(self, number: int, draw: Draw) -> Proposal:
        proposal = Proposal(number, draw.cell, draw.seed, "seed")
        self.pending[number] = proposal
        return proposal

    def observe(
        self, run: int, cell: Cell, behaviours: frozenset[str], verdict: str, folder: str | None
    ) -> Observation:
        origin = "seed" if self.pending.pop(run, None) is not None else "replay"
        return Observation(self.coverage.add(run, cell, origin, None, verdict, behaviours))

    def stats(self) -> dict[str, Any]:
        return {"guide": self.name}


class CoverageGuide:
    """Fresh draws and mutations of a corpus, balanced by a bandit on new behaviour."""

    name = "coverage"

    def __init__(self, seed: int, shard: Shard, check: Check = candidate_problem) -> None:
        self.rng = random.Random(f"guide {seed} {shard}")
        self.check = check
        self.coverage = Coverage()
        self.bandit = Bandit(ARMS)
        self.corpus: dict[Cell, list[Entry]] = {}
        self.picks: dict[int, int] = {}
        self.pending: dict[int, Proposal] = {}
        self.discarded: dict[str, int] = dict.fromkeys(OPERATORS, 0)

    # ---- proposing --------------------------------------------------------------------

    def propose(self, number: int, draw: Draw) -> Proposal:
        cell = draw.cell
        if cell.scenario not in GUIDED_SCENARIOS:
            proposal = Proposal(number, cell, draw.seed, "seed")
        else:
            entries = self.corpus.get(cell, [])
            allowed = ["fresh"]
            if entries:
                allowed += [op for op in OPERATORS if op != "splice" or len(entries) > 1]
            arm = self.bandit.choose(self.rng, allowed)
            found = None if arm == "fresh" else self._mutant(number, draw, arm, entries)
            if arm != "fresh" and found is None:
                self.bandit.reward(arm, False)  # nothing it made could run
            tries = 0 if arm == "fresh" else MAX_TRIES
            proposal = found or self._fresh(number, draw, tries)
        self.pending[number] = proposal
        return proposal

    def _fresh(self, number: int, draw: Draw, discarded: int) -> Proposal:
        base = seed_spec(draw.cell, draw.seed)
        spec = replace(base, workload=draw_workload(base.workload, self.rng))
        if self.check(spec) is not None:
            spec = base
        return Proposal(number, draw.cell, draw.seed, "fresh", spec, discarded=discarded)

    def _parent(self, entries: list[Entry], other_than: Entry | None = None) -> Entry:
        """A corpus entry, favouring those that found more and were mutated less."""
        pool = [e for e in entries if e is not other_than]
        weights = [(1 + len(e.new)) / (1 + self.picks.get(e.run, 0)) for e in pool]
        return self.rng.choices(pool, weights=weights)[0]

    def _mutant(
        self, number: int, draw: Draw, operator: str, entries: list[Entry]
    ) -> Proposal | None:
        for attempt in range(MAX_TRIES):
            parent = self._parent(entries)
            other = self._parent(entries, parent) if operator == "splice" else None
            made = mutate(operator, parent.spec, self.rng, None if other is None else other.spec)
            candidate = None if made is None else replace(made, seed=draw.seed)
            if candidate is None or candidate == replace(parent.spec, seed=draw.seed):
                self.discarded[operator] += 1
                continue
            if self.check(candidate) is not None:
                self.discarded[operator] += 1
                continue
            self.picks[parent.run] = self.picks.get(parent.run, 0) + 1
            return Proposal(
                number,
                draw.cell,
                draw.seed,
                operator,
                candidate,
                parent.run,
                None if other is None else other.run,
                attempt,
            )
        return None

    # ---- observing --------------------------------------------------------------------

    def observe(
        self, run: int, cell: Cell, behaviours: frozenset[str], verdict: str, folder: str | None
    ) -> Observation:
        proposal = self.pending.pop(run, None)
        origin = "replay" if proposal is None else proposal.origin
        parent = None if proposal is None else proposal.parent
        point = self.coverage.add(run, cell, origin, parent, verdict, behaviours)
        if proposal is None or proposal.spec is None:
            return Observation(point)
        self.bandit.reward(origin, bool(point.new))
        if not point.new:
            return Observation(point)
        entry = Entry(run, cell, proposal.spec, origin, parent, point.new, folder)
        self.corpus.setdefault(cell, []).append(entry)
        return Observation(point, entry)

    def stats(self) -> dict[str, Any]:
        return {
            "guide": self.name,
            "corpus": sum(len(e) for e in self.corpus.values()),
            "arms": {
                arm: {"runs": s.pulls, "new": s.wins, "discarded": self.discarded.get(arm, 0)}
                for arm, s in self.bandit.stats.items()
            },
        }


def make_guide(name: str, seed: int, shard: Shard, check: Check = candidate_problem) -> Guide:
    if name == "coverage":
        return CoverageGuide(seed, shard, check)
    if name == "random":
        return BlindGuide()
    raise UsageError(f"unknown guide {name!r} (known: {', '.join(GUIDES)})")


def propose_line(proposal: Proposal) -> dict[str, Any]:
    return {"propose": proposal.to_json()}


def observe_line(
    run: int, cell: Cell, behaviours: Iterable[str], verdict: str, folder: str | None
) -> dict[str, Any]:
    return {
        "observe": {
            "run": run,
            "cell": cell_json(cell),
            "features": sorted(behaviours),
            "verdict": verdict,
            "folder": folder,
        }
    }


def replay(guide: Guide, lines: Iterable[Mapping[str, Any]]) -> list[Proposal]:
    """Feed a guide.jsonl's lines to `guide` in their order; every proposal it makes must be
    the one recorded (InputError otherwise: the log is not this guide's, or the lab changed).
    Returns the proposals."""
    made: list[Proposal] = []
    for line in lines:
        if "propose" in line:
            said = line["propose"]
            cell = cell_of(said["cell"])
            proposal = guide.propose(
                int(said["run"]), Draw(int(said["run"]), cell, int(said["seed"]))
            )
            if (proposal.origin, proposal.digest) != (said["origin"], said["spec"]):
                raise InputError(
                    f"guide.jsonl: run {said['run']} was {said['origin']} {said['spec']}, "
                    f"this guide makes {proposal.origin} {proposal.digest}: not its log"
                )
            made.append(proposal)
        elif "observe" in line:
            seen = line["observe"]
            guide.observe(
                int(seen["run"]),
                cell_of(seen["cell"]),
                frozenset(str(f) for f in seen["features"]),
                str(seen["verdict"]),
                seen.get("folder"),
            )
    return made
