"""What a campaign runs next, and what it learns from each run: the campaign's generator.

    guide = make_guide("coverage", seed, shard)       or "random" (the default)
    proposal = guide.propose(number, draw)           the run to make of a draw
    observation = guide.observe(Seen(run, cell, behaviours, verdict, folder, seconds))

`random` (BlindGuide) runs each draw's seed as `lab run SCENARIO --seed N` does — today's
campaign — and only measures the behaviours each run reached.

`coverage` (CoverageGuide) spends the budget where new behaviour appears. For a cell of
`random`, each run is a fresh draw (the seed's schedule, with a workload drawn too), a
directed one (the seed's schedule drawn with the kinds the cell ran least first), or a
mutation (lab.campaign.mutations) of a corpus entry (lab.campaign.corpus) — a run that
reached behaviour its cell had not shown — chosen by bandits (lab.campaign.bandit: one among
those three ways, one among the operators) rewarded when a run pays (Corpus.paid: new
behaviour a minute at least as fast as the cell's typical run lately). A cell's first WARMUP
runs are schedules of HA failure patterns but for one fresh draw, the third (`warmup_way`),
so its corpus starts from diverse seeds and from the patterns' schedules before any bandit
has evidence; a pattern run's settings are drawn too (lab.campaign.run_settings), and `add`
and `stack` favour the kinds of fault the cell has run least. A mutation is kept only when
candidate_problem finds nothing (the spec checker, the preflight, `random`'s rule, an
affordable workload); otherwise it is discarded and counted, and after MAX_TRIES the run is
a fresh draw. Cells of other scenarios run their seeds, as with `random`. Every guided run
is an ordinary run of `random` with an explicit schedule, workload and settings in its
spec.json (`lab replay FOLDER` repeats it).

Every choice comes from the guide's own `random.Random` (seeded by the campaign's seed and
shard) and the observations fed to it, so the same proposals and observations, in the same
order, make the same decisions: guide.jsonl records that order (`{"propose": …}` and
`{"observe": …}` lines), and `replay(guide, lines)` follows it again, checking each proposal
(both in lab.campaign.guide_files).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from lab.campaign.bandit import Bandit
from lab.campaign.candidates import candidate_problem, directed_spec, seed_spec
from lab.campaign.corpus import Corpus, Entry
from lab.campaign.coverage import Coverage, CoveragePoint, cell_json, cell_of
from lab.campaign.danger import danger_score
from lab.campaign.failures import failure_id
from lab.campaign.mutations import OPERATORS, mutate
from lab.campaign.plan import GUIDES, Cell, Draw, Shard
from lab.campaign.run_settings import draw_settings
from lab.campaign.workloads import draw_heavy_workload, draw_workload
from lab.ground.errors import UsageError
from lab.ground.spec import RunSpec
from scenarios.random_patterns import pattern_schedule
from scenarios.random_rule import draw_of, spans_of

__all__ = [
    "ARMS",
    "GUIDED_SCENARIOS",
    "GUIDES",
    "MAX_TRIES",
    "WARMUP",
    "BlindGuide",
    "CoverageGuide",
    "Entry",
    "Guide",
    "Observation",
    "Proposal",
    "Seen",
    "make_guide",
    "warmup_way",
]

GUIDED_SCENARIOS = frozenset({"random"})  # whose rule a mutated schedule is checked against
# The first choice: a fresh draw (directed?), a schedule of HA failure patterns, a mutation.
WAYS = ("fresh", "directed", "pattern", "mutate")
ARMS = ("fresh", "directed", "pattern", *OPERATORS)  # what a run is made by (campaign.json)
MAX_TRIES = 12  # candidates of one operator tried before the run is a fresh draw
WARMUP = 4  # a cell's first runs: mostly patterns, one fresh draw (warmup_way)
Check = Callable[[RunSpec], str | None]


@dataclass(frozen=True)
class Proposal:
    """A run to make: `origin` says how — `seed` (`lab run SCENARIO --seed`), `fresh` (the
    seed's schedule and a drawn workload), `directed` (the seed's schedule drawn with the
    kinds the cell ran least first), an operator's name (a mutation of run `parent`, spliced
    with run `other`) — and `spec` is what it runs (None: the seed's own)."""

    number: int
    cell: Cell
    seed: int
    origin: str
    spec: RunSpec | None = None
    parent: int | None = None
    other: int | None = None
    discarded: int = 0
    patterns: tuple[str, ...] = ()  # a pattern run's patterns, in order

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
            **({"patterns": list(self.patterns)} if self.patterns else {}),
        }


@dataclass(frozen=True)
class Seen:
    """What run `run` showed: its behaviours, verdict, folder (relative to the campaign's) and
    how long it took (seconds; None when not known)."""

    run: int
    cell: Cell
    behaviours: frozenset[str]
    verdict: str = "held"
    folder: str | None = None
    seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "cell": cell_json(self.cell),
            "features": sorted(self.behaviours),
            "verdict": self.verdict,
            "folder": self.folder,
            "seconds": self.seconds,
        }

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> Seen:
        seconds = raw.get("seconds")
        return Seen(
            int(raw["run"]),
            cell_of(raw["cell"]),
            frozenset(str(f) for f in raw["features"]),
            str(raw["verdict"]),
            raw.get("folder"),
            None if seconds is None else float(seconds),
        )


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

    def observe(self, seen: Seen) -> Observation:
        """What a run showed (a run it did not propose, such as a replay, too)."""
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

    def observe(self, seen: Seen) -> Observation:
        origin = "seed" if self.pending.pop(seen.run, None) is not None else "replay"
        point = self.coverage.add(seen.run, seen.cell, origin, None, seen.verdict, seen.behaviours)
        return Observation(point)

    def stats(self) -> dict[str, Any]:
        return {"guide": self.name}


class CoverageGuide:
    """Fresh draws and mutations of a corpus, balanced by bandits on new behaviour."""

    name = "coverage"

    def __init__(self, seed: int, shard: Shard, check: Check = candidate_problem) -> None:
        self.rng = random.Random(f"guide {seed} {shard}")
        self.check = check
        self.coverage = Coverage()
        self.ways = Bandit(WAYS)
        self.operators = Bandit(OPERATORS)
        self.corpus: dict[Cell, Corpus] = {}
        self.proposed: Counter[Cell] = Counter()
        self.kinds: dict[Cell, Counter[str]] = {}  # faults of each kind proposed, by cell
        self.pending: dict[int, Proposal] = {}
        self.discarded: dict[str, int] = dict.fromkeys(ARMS[1:], 0)

    # ---- proposing --------------------------------------------------------------------

    def propose(self, number: int, draw: Draw) -> Proposal:
        cell = draw.cell
        if cell.scenario not in GUIDED_SCENARIOS:
            proposal = Proposal(number, cell, draw.seed, "seed")
        else:
            corpus = self.corpus.setdefault(cell, Corpus())
            self.proposed[cell] += 1
            warm = self.proposed[cell] > WARMUP
            if warm:
                ways = ["fresh", "pattern", "directed", *(["mutate"] if corpus else [])]
                way = self.ways.choose(self.rng, ways)
            else:
                way = warmup_way(self.proposed[cell])
            found = None
            if way == "directed":
                found = self._directed(number, draw)
            elif way == "pattern":
                found = self._pattern(number, draw)
            if way == "mutate":
                allowed = [op for op in OPERATORS if op != "splice" or len(corpus) > 1]
                operator = self.operators.choose(self.rng, allowed)
                found = self._mutant(number, draw, operator, corpus)
                if found is None:  # nothing it made could run
                    self.ways.reward("mutate", False)
                    self.operators.reward(operator, False)
            proposal = found or self._fresh(number, draw, 0 if way == "fresh" else MAX_TRIES)
            if proposal.spec is not None:
                self._count_kinds(cell, proposal.spec)
        self.pending[number] = proposal
        return proposal

    def _count_kinds(self, cell: Cell, spec: RunSpec) -> None:
        counts = self.kinds.setdefault(cell, Counter())
        for span in spans_of(spec.schedule):
            found = draw_of(spec, span.start)
            if found is not None:
                counts[found[0]] += 1

    def _directed(self, number: int, draw: Draw) -> Proposal:
        """The seed's schedule drawn again, each kind weighed down by the faults of it the cell
        has run: the kinds run least come first."""
        seen = self.kinds.get(draw.cell, Counter())
        base = directed_spec(draw.cell, draw.seed, lambda k: k.weight / (1 + seen[k.name]))
        spec = replace(base, workload=draw_workload(base.workload, self.rng))
        if self.check(spec) is not None:
            self.discarded["directed"] += 1
            return self._fresh(number, draw, 1)
        return Proposal(number, draw.cell, draw.seed, "directed", spec)

    def _pattern(self, number: int, draw: Draw) -> Proposal:
        """A schedule of HA failure patterns (scenarios.random_patterns) inside `random`'s
        rule, under a workload drawn heavy half of the time (replicas fall further behind)
        and settings drawn too (lab.campaign.run_settings: durability, a commit's timeout)."""
        base = seed_spec(draw.cell, draw.seed)
        heavy = self.rng.random() < 0.5
        workload = (draw_heavy_workload if heavy else draw_workload)(base.workload, self.rng)
        loaded = draw_settings(replace(base, workload=workload), self.rng)
        schedule, names = pattern_schedule(loaded, self.rng)
        if not names:  # no pattern fits this cell's target and backend: nothing was made
            return self._fresh(number, draw, 0)
        spec = loaded.with_schedule(schedule)
        if self.check(spec) is not None:
            self.discarded["pattern"] += 1
            return self._fresh(number, draw, 1)
        return Proposal(number, draw.cell, draw.seed, "pattern", spec, patterns=names)

    def _fresh(self, number: int, draw: Draw, discarded: int) -> Proposal:
        base = seed_spec(draw.cell, draw.seed)
        spec = replace(base, workload=draw_workload(base.workload, self.rng))
        if self.check(spec) is not None:
            spec = base
        return Proposal(number, draw.cell, draw.seed, "fresh", spec, discarded=discarded)

    def _mutant(self, number: int, draw: Draw, operator: str, corpus: Corpus) -> Proposal | None:
        seen = self.kinds.get(draw.cell, Counter())
        for attempt in range(MAX_TRIES):
            parent = corpus.pick(self.rng)
            spliced = operator == "splice" or (operator == "havoc" and len(corpus) > 1)
            other = corpus.pick(self.rng, parent) if spliced else None
            made = mutate(
                operator, parent.spec, self.rng, None if other is None else other.spec, seen
            )
            candidate = None if made is None else replace(made, seed=draw.seed)
            if candidate is None or candidate == replace(parent.spec, seed=draw.seed):
                self.discarded[operator] += 1
                continue
            if self.check(candidate) is not None:
                self.discarded[operator] += 1
                continue
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

    def observe(self, seen: Seen) -> Observation:
        proposal = self.pending.pop(seen.run, None)
        origin = "replay" if proposal is None else proposal.origin
        parent = None if proposal is None else proposal.parent
        point = self.coverage.add(
            seen.run, seen.cell, origin, parent, seen.verdict, seen.behaviours
        )
        if proposal is None or proposal.spec is None:
            return Observation(point)
        corpus = self.corpus.setdefault(seen.cell, Corpus())
        danger = danger_score(point.features)
        paid = corpus.paid(len(point.new), seen.seconds, danger)
        if origin in WAYS:
            self.ways.reward(origin, paid)
        else:
            self.ways.reward("mutate", paid)
            self.operators.reward(origin, paid)
        corpus.seen(point.features, len(point.new), seen.seconds)
        if not point.new and not danger:  # nothing new, and not close: not worth mutating
            return Observation(point)
        entry = Entry(
            seen.run,
            seen.cell,
            proposal.spec,
            origin,
            parent,
            point.new,
            seen.folder,
            point.features,
        )
        corpus.add(entry)
        return Observation(point, entry)

    def stats(self) -> dict[str, Any]:
        arms = {w: self.ways.stats[w] for w in WAYS if w != "mutate"} | self.operators.stats
        return {
            "guide": self.name,
            "corpus": sum(len(c) for c in self.corpus.values()),
            "arms": {
                arm: {"runs": s.pulls, "paid": s.wins, "discarded": self.discarded.get(arm, 0)}
                for arm, s in arms.items()
            },
        }


def warmup_way(proposed: int) -> str:
    """A cell's `proposed`-th run in its warm-up: two pattern draws, a fresh draw, a pattern
    draw. Every early run shows new behaviour whatever made it, so a bandit rewarded for
    novelty learns nothing in those runs but chance — and a way that lost the first draws
    could go unplayed for a whole short campaign. Both ways are played from the start, the
    patterns (the shapes real HA failures took) more; the bandit chooses once the warm-up is
    over."""
    return "fresh" if proposed == 3 else "pattern"


def make_guide(name: str, seed: int, shard: Shard, check: Check = candidate_problem) -> Guide:
    if name == "coverage":
        return CoverageGuide(seed, shard, check)
    if name == "random":
        return BlindGuide()
    raise UsageError(f"unknown guide {name!r} (known: {', '.join(GUIDES)})")
