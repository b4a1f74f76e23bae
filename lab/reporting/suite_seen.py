"""The `seen` entries a suite session gives a target's declared deviations (`lab tables
seen RUNS_DIR…`): how often each declaration was reproduced, per backend, ready to add to
the declaration's `seen` list (lab.judge.seen_rates) in the target's deviations file.

    seen_entries(cells, declared, day) → [SeenEntry]   one per declaration and backend
                                                       that the sessions ran
    SeenEntry.toml()                                   the entry as a TOML inline table

A declaration is counted over the runs of its scenario on its backend: K of N is how many
of those runs reproduced it. One a session ran but never reproduced is given too (0/N):
that is what "fixed upstream?" rests on. A run refused, or of a scenario no declaration
names, gives nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from lab.reporting.suite_cells import Cell
from lab.reporting.suite_declared import Declared
from lab.reporting.suite_rates import Tally, tally
from lab.reporting.suite_table import seeds_text

__all__ = ["SeenEntry", "seen_entries"]


@dataclass(frozen=True)
class SeenEntry:
    """Declaration `deviation` of `target` (`NAME[@VERSION]`), reproduced in `times` of
    the `runs` runs of `scenario` on `backend` (seeds `seeds`) on `day`."""

    target: str
    deviation: str
    scenario: str
    backend: str
    times: int
    runs: int
    seeds: tuple[int, ...]
    day: dt.date
    settings: tuple[tuple[str, str], ...] = ()  # the settings the runs' session chose

    def toml(self, note: str = "") -> str:
        shown = seeds_text(self.seeds, dash="-") if self.seeds else ""
        given = ", ".join(f"{k}={v}" for k, v in self.settings)
        said = "; ".join(x for x in (given, shown, note) if x)
        extra = f', note = "{_escaped(said)}"' if said else ""
        return (
            f'{{ backend = "{self.backend}", rate = "{self.times}/{self.runs}", '
            f"date = {self.day.isoformat()}{extra} }}"
        )


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _entries(counted: Tally, declared: Declared, day: dt.date) -> list[SeenEntry]:
    given = dict(counted.settings)
    found = declared(counted.target, counted.scenario, counted.backend, counted.mode, given)
    entries = []
    for d in found:
        times = counted.deviation_rate(d.id).count
        where = (counted.target, d.id, counted.scenario, counted.backend)
        entries.append(SeenEntry(*where, times, counted.runs, counted.seeds, day, counted.chosen))
    return entries


def seen_entries(cells: Sequence[Cell], declared: Declared, day: dt.date) -> list[SeenEntry]:
    """An entry per declared deviation and backend the cells' runs (refusals aside) count,
    in the order their scenarios were first run."""
    records = [c.record() for c in cells if c.verdict is not None]
    return [entry for counted in tally(records) for entry in _entries(counted, declared, day)]
