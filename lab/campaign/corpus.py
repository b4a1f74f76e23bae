"""A guided campaign's corpus, cell by cell: the runs that reached behaviour their cell had
not shown, what each of them showed, and how often every behaviour has been seen — which
says which entry to mutate next, and whether a run paid.

    corpus = Corpus()
    corpus.seen(features, new, seconds)    every guided run of the cell, as it is observed
    corpus.add(entry)                      a run that reached new behaviour
    corpus.pick(rng) → Entry               the next parent
    corpus.paid(new, seconds) → bool       did a run with `new` new behaviours pay

**Which parent**: an entry's energy is the rarity of what it showed — the sum, over its
behaviours, of one over the runs that showed each — divided by one plus the times it was
mutated already. Entries on the frontier (behaviours few runs reach) are mutated most, and
no entry takes all the budget.

**Danger**: a run's near misses (lab.campaign.danger, behaviours named `danger:…`) weigh
more than novelty. An entry's energy is multiplied by one plus DANGER_WEIGHT for each kind of
near miss it showed, and a run that came close joins the corpus even when it showed nothing
new: a run that came close is worth mutating more than one that was merely new. A run also
pays when it came at least as close as the cell's closest run lately (as many kinds of near
miss, at least one).

**What pays**: a run pays when it reached new behaviour, at least as fast as the cell's
typical run lately: new behaviours a minute of the run (its whole length, start to end, so a
workload that makes runs longer must find more), against the median over the cell's last
RECENT guided runs. Early on, when nearly every run finds something, only the better half
pays, so the bandits can tell the arms apart; later, when most find nothing, any new
behaviour pays.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from lab.campaign.coverage import cell_json
from lab.campaign.danger import danger_score
from lab.campaign.plan import Cell
from lab.ground.spec import RunSpec

__all__ = ["DANGER_WEIGHT", "RECENT", "Corpus", "Entry"]

RECENT = 16
DANGER_WEIGHT = 2.0


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
    features: tuple[str, ...] = ()  # everything it showed

    def to_json(self) -> dict[str, Any]:
        return {
            "v": 1,
            "run": self.run,
            "cell": cell_json(self.cell),
            "origin": self.origin,
            "parent": self.parent,
            "folder": self.folder,
            "new": list(self.new),
            "features": list(self.features),
            "spec": self.spec.to_json(),
        }


def _rate(new: int, seconds: float | None) -> float:
    """New behaviours a minute of run (at least 10 s counted)."""
    return new * 60.0 / max(10.0, 60.0 if seconds is None else seconds)


class Corpus:
    """One cell's corpus."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.hits: Counter[str] = Counter()
        self.picks: Counter[int] = Counter()
        self.recent: deque[float] = deque(maxlen=RECENT)
        self.recent_danger: deque[int] = deque(maxlen=RECENT)

    def __len__(self) -> int:
        return len(self.entries)

    def paid(self, new: int, seconds: float | None = None, danger: int = 0) -> bool:
        """Whether a run that reached `new` new behaviours in `seconds`, with `danger` kinds
        of near miss, paid (asked before `seen` counts it); without its length, a run counts
        as a minute."""
        if danger > 0 and danger >= max(self.recent_danger, default=0):
            return True
        if new <= 0:
            return False
        return not self.recent or _rate(new, seconds) >= statistics.median(self.recent)

    def seen(self, features: tuple[str, ...], new: int, seconds: float | None = None) -> None:
        self.hits.update(features)
        self.recent.append(_rate(new, seconds))
        self.recent_danger.append(danger_score(features))

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)

    def _energy(self, entry: Entry) -> float:
        rarity = sum(1.0 / self.hits[f] for f in entry.features if self.hits[f])
        danger = 1.0 + DANGER_WEIGHT * danger_score(entry.features)
        return (1.0 + rarity) * danger / (1 + self.picks[entry.run])

    def pick(self, rng: random.Random, other_than: Entry | None = None) -> Entry:
        pool = [e for e in self.entries if e is not other_than]
        chosen = rng.choices(pool, weights=[self._energy(e) for e in pool])[0]
        self.picks[chosen.run] += 1
        return chosen
