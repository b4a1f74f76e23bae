"""Verdicts as rates: a scenario's runs on one target and backend, one per seed, counted.

    tally(cells) → [Tally]                  one per scenario, target and backend
    Rate(count, runs)                       K/N with its Wilson interval (95 %)
    flags(tally, declared, before) → [str]  what changed: a declared deviation not seen any
                                            more, a rate unlike the one declared or
                                            published before, a held verdict now broken
    summary(records, declared) → [str]      a session's rates, a line each (pytest's end)
    Baseline.read(path) / .write(path)      the rates of a page (its JSON twin), for the
                                            next page to compare with

A run counts as held, deviation (a declared deviation reproduced), broken, or unknown (the
run could not say, or wrote no result). The service gap of a run is its longest time
between two acknowledged sends (result.json's metrics); a tally gives their median and
maximum over its runs.

A rate is compared with an earlier one by their intervals: two rates differ when their 95 %
Wilson intervals do not overlap (5/5 against 0/5 does; 5/5 against 1/5 does not: five runs
tell little). A held verdict that breaks is flagged whatever the intervals say: the
documents predict it holds every time, and nothing declared explains the break.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from lab.ground.files import write_json
from lab.judge.deviations import Deviation
from lab.judge.seen_rates import latest_seen
from lab.reporting.suite_declared import Declared
from spark_reports.wilson import wilson_interval

__all__ = ["OUTCOMES", "Baseline", "Rate", "RunRecord", "Tally", "flags", "summary", "tally"]

OUTCOMES = ("held", "deviation", "broken", "unknown")
BASELINE_VERSION = 1


# A row of the rates: scenario, target (`NAME[@VERSION]`), backend and the target settings
# its session chose (`--lab-target-setting`; a scenario's own, like split-brain's JE
# timeouts, are not a choice: a session with the defaults has none).
Key: TypeAlias = tuple[str, str, str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class RunRecord:
    """What a tally needs of one run: its scenario, target, backend and mode, its seed,
    outcome (one of OUTCOMES), the deviation it reproduced, its longest gap and the target
    settings it was given (without the target's defaults)."""

    scenario: str
    target: str
    backend: str
    seed: int | None
    outcome: str
    deviation: str | None = None
    gap_s: float | None = None
    mode: str = ""
    settings: tuple[tuple[str, str], ...] = ()
    chosen: tuple[tuple[str, str], ...] = ()  # the settings its session chose (its row)


@dataclass(frozen=True)
class Rate:
    """`count` of `runs`, with its 95 % Wilson interval (None without a run)."""

    count: int
    runs: int

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.count, self.runs)

    def differs_from(self, other: Rate) -> bool:
        """Whether the two intervals do not overlap (False when either has no run)."""
        mine, theirs = self.interval, other.interval
        if mine is None or theirs is None:
            return False
        return mine[1] < theirs[0] or theirs[1] < mine[0]

    def __str__(self) -> str:
        interval = self.interval
        if interval is None:
            return "0/0"
        low, high = (round(100 * x) for x in interval)
        return f"{self.count}/{self.runs} ({low}–{high} %)"


@dataclass(frozen=True)
class Tally:
    """The runs of one scenario on one target and backend with the same target settings,
    counted by outcome."""

    scenario: str
    target: str
    backend: str
    counts: Mapping[str, int] = field(default_factory=dict)  # by outcome
    deviations: Mapping[str, int] = field(default_factory=dict)  # reproduced, by id
    seeds: tuple[int, ...] = ()
    gaps_s: tuple[float, ...] = ()
    mode: str = ""
    settings: tuple[tuple[str, str], ...] = ()  # its runs' target settings (no defaults)
    chosen: tuple[tuple[str, str], ...] = ()  # those their session chose: the row's key

    @property
    def key(self) -> Key:
        return self.scenario, self.target, self.backend, self.chosen

    @property
    def runs(self) -> int:
        return sum(self.counts.values())

    def rate(self, outcome: str) -> Rate:
        return Rate(int(self.counts.get(outcome, 0)), self.runs)

    def deviation_rate(self, deviation_id: str) -> Rate:
        return Rate(int(self.deviations.get(deviation_id, 0)), self.runs)

    @property
    def gap_median_s(self) -> float | None:
        return statistics.median(self.gaps_s) if self.gaps_s else None

    @property
    def gap_max_s(self) -> float | None:
        return max(self.gaps_s) if self.gaps_s else None

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "target": self.target,
            "backend": self.backend,
            "mode": self.mode,
            "runs": self.runs,
            **{o: int(self.counts.get(o, 0)) for o in OUTCOMES},
            "deviations": dict(sorted(self.deviations.items())),
            "seeds": list(self.seeds),
            "gaps_s": list(self.gaps_s),
            "settings": dict(self.settings),
            "chosen": dict(self.chosen),
        }

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> Tally:
        return Tally(
            str(raw["scenario"]),
            str(raw["target"]),
            str(raw["backend"]),
            {o: int(raw.get(o, 0)) for o in OUTCOMES},
            {str(k): int(v) for k, v in dict(raw.get("deviations") or {}).items()},
            tuple(int(s) for s in raw.get("seeds") or ()),
            tuple(float(g) for g in raw.get("gaps_s") or ()),
            str(raw.get("mode", "")),
            tuple(sorted((str(k), str(v)) for k, v in dict(raw.get("settings") or {}).items())),
            tuple(sorted((str(k), str(v)) for k, v in dict(raw.get("chosen") or {}).items())),
        )


def tally(records: Iterable[RunRecord]) -> list[Tally]:
    """One tally per scenario, target, backend and target settings, in the order first met;
    a run's seed and gap are kept in the order of its runs."""
    grouped: dict[Key, list[RunRecord]] = {}
    for r in records:
        grouped.setdefault((r.scenario, r.target, r.backend, r.chosen), []).append(r)
    found = []
    for (scenario, target, backend, _), runs in grouped.items():
        counts = {o: sum(1 for r in runs if r.outcome == o) for o in OUTCOMES}
        reproduced: dict[str, int] = {}
        for r in runs:
            if r.outcome == "deviation" and r.deviation:
                reproduced[r.deviation] = reproduced.get(r.deviation, 0) + 1
        found.append(
            Tally(
                scenario,
                target,
                backend,
                counts,
                reproduced,
                tuple(r.seed for r in runs if r.seed is not None),
                tuple(r.gap_s for r in runs if r.gap_s is not None),
                runs[0].mode,
                runs[0].settings,
                runs[0].chosen,
            )
        )
    return found


@dataclass(frozen=True)
class Baseline:
    """The rates a page published (`made`: when), read back from its JSON twin."""

    made: dt.datetime | None
    tallies: tuple[Tally, ...] = ()
    sessions: tuple[str, ...] = ()  # the session folders the rates came from

    def find(self, key: Key) -> Tally | None:
        return next((t for t in self.tallies if t.key == key), None)

    @property
    def day(self) -> str:
        return "before" if self.made is None else self.made.date().isoformat()

    def to_json(self, before: Baseline | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "v": BASELINE_VERSION,
            "made": None if self.made is None else self.made.isoformat(),
            "sessions": list(self.sessions),
            "tallies": [t.to_json() for t in self.tallies],
        }
        if before is not None:
            out["before"] = before.to_json()
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> Baseline:
        made = raw.get("made")
        return Baseline(
            None if not made else dt.datetime.fromisoformat(str(made)),
            tuple(Tally.from_json(t) for t in raw.get("tallies") or ()),
            tuple(str(s) for s in raw.get("sessions") or ()),
        )

    @staticmethod
    def read(path: Path) -> tuple[Baseline | None, Baseline | None]:
        """A page's rates and the rates they were compared with; (None, None) without the
        file. A file that does not parse is a ValueError naming it."""
        if not path.is_file():
            return None, None
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            before = raw.get("before")
            return Baseline.from_json(raw), None if before is None else Baseline.from_json(before)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{path}: not a rates file of `lab tables suite` ({exc})") from None

    def write(self, path: Path, before: Baseline | None) -> None:
        write_json(path, self.to_json(before))


def _declared_flags(now: Tally, declared: Sequence[Deviation]) -> list[str]:
    said = []
    for deviation in declared:
        rate = now.deviation_rate(deviation.id)
        seen = latest_seen(deviation.seen, now.backend)
        if seen is None:
            if rate.count == 0 and now.runs:
                said.append(
                    f"`{deviation.id}` (declared, no rate given) not seen in {now.runs} runs: "
                    "fixed upstream?"
                )
            continue
        earlier = Rate(seen.times, seen.runs)
        if not rate.differs_from(earlier):
            continue
        why = "fixed upstream?" if rate.count == 0 else "its rate changed"
        said.append(f"`{deviation.id}` seen {seen}, {rate.count}/{rate.runs} now: {why}")
    return said


def flags(now: Tally, declared: Sequence[Deviation], before: Baseline | None) -> list[str]:
    """What changed in `now` against the declared deviations' rates (`seen`) and the rates
    published `before`, one line each (see the module's note)."""
    said = _declared_flags(now, declared)
    earlier = None if before is None else before.find(now.key)
    broken = now.rate("broken")
    if before is None or earlier is None or earlier.runs == 0:
        if broken.count:
            said.append(f"broken in {broken.count}/{broken.runs}, no earlier rate to compare")
        return said
    held_before = earlier.rate("held")
    compared = ["held", "deviation", "broken"]
    if broken.count and held_before.count == held_before.runs:
        said.append(
            f"held {held_before.count}/{held_before.runs} ({before.day}), "
            f"broken in {broken.count}/{broken.runs} now"
        )
        compared = ["deviation"]
    for outcome in compared:
        was, is_ = earlier.rate(outcome), now.rate(outcome)
        if is_.differs_from(was):
            said.append(
                f"{outcome} {was.count}/{was.runs} ({before.day}), "
                f"{is_.count}/{is_.runs} now: its rate changed"
            )
    return said


def summary(
    records: Iterable[RunRecord],
    declared: Declared,
) -> list[str]:
    """A line per scenario, target and backend with more than one run: its rates and gap,
    then what changed against the declared deviations' rates, indented."""
    lines = []
    for found in tally(records):
        if found.runs < 2:
            continue
        gap = found.gap_median_s
        shown = "" if gap is None else f"; gap median {gap:.1f} s, max {found.gap_max_s:.1f} s"
        lines.append(
            f"{found.scenario} ({found.target}, {found.backend}): held {found.rate('held')}, "
            f"deviation {found.rate('deviation')}, broken {found.rate('broken')}, "
            f"unknown {found.rate('unknown').count}{shown}"
        )
        given = dict(found.settings)
        declares = declared(found.target, found.scenario, found.backend, found.mode, given)
        said = flags(found, declares, None)
        lines.extend(f"  changed: {line}" for line in said)
    return lines
