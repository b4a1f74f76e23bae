"""The detection benchmark's statistics, as the fuzzer benchmarks (Magma, FuzzBench) report
them: time to first detection censored at the budget, a Kaplan–Meier survival curve per
generator, and the paired per-bug comparison of two generators.

    bug_median(cells)            a bug's median time over its trials, a miss counting as
                                 "not within the budget" (None when most trials missed)
    paired_ratio(cells, a, b)    the median over the bugs both found of a's time / b's
    survival(cells, g, budget)   Survival: Kaplan–Meier (scipy.stats.ecdf on CensoredData)
    compare(cells, a, b, budget) Comparison: per bug and pooled, the median ratio, the
                                 Mann–Whitney U test and the Vargha–Delaney A12

SciPy (the `reports` extra) is imported by the last two only; the first two are plain.

A12 of generator b over a is the chance that a trial of b finds the bug sooner than one of a
(ties count half; a miss is a time of the budget): 0.5 no difference, 0.56 small, 0.64
medium, 0.71 large (Vargha and Delaney, 2000); it is U / (m n) of scipy's Mann–Whitney U of
a's times against b's.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from lab.bench.detection_results import CellResult

__all__ = [
    "Comparison",
    "PairedBug",
    "Survival",
    "bug_median",
    "compare",
    "paired_ratio",
    "survival",
    "times_of",
]


def times_of(cells: Sequence[CellResult], budget_min: float) -> list[float]:
    """The trials' minutes to detection, a miss counting as the budget (censored there); a
    trial that failed to run is left out."""
    return [
        c.minutes if c.found and c.minutes is not None else budget_min for c in cells if not c.error
    ]


def bug_median(cells: Sequence[CellResult]) -> float | None:
    """The low median of a bug's times over its trials, a miss counting as never: a time when
    at least half its trials found it, None otherwise."""
    ran = [c for c in cells if not c.error]
    if not ran:
        return None
    times = sorted(c.minutes if c.found and c.minutes is not None else math.inf for c in ran)
    low = statistics.median_low(times)
    return None if math.isinf(low) else low


def _by_bug(cells: Sequence[CellResult], generator: str) -> dict[str, list[CellResult]]:
    out: dict[str, list[CellResult]] = {}
    for c in cells:
        if c.bug is not None and c.generator == generator:
            out.setdefault(c.bug, []).append(c)
    return out


def paired_ratio(cells: Sequence[CellResult], base: str, other: str) -> tuple[float | None, int]:
    """(the median over the bugs both generators found — by bug_median — of base's median
    over other's: how many times faster `other` found them, the number of those bugs)."""
    mine, theirs = _by_bug(cells, base), _by_bug(cells, other)
    ratios = []
    for bug in sorted(set(mine) & set(theirs)):
        a, b = bug_median(mine[bug]), bug_median(theirs[bug])
        if a is not None and b is not None:
            ratios.append(a / max(b, 0.01))
    return (round(statistics.median(ratios), 2) if ratios else None), len(ratios)


@dataclass(frozen=True)
class Survival:
    """The share of a generator's trials that had not yet found their bug after t minutes."""

    generator: str
    trials: int
    found: int
    times: tuple[float, ...]  # where the curve steps down (minutes)
    probabilities: tuple[float, ...]  # the share still not found just after each step
    median: float | None  # the first time the share is 0.5 or less (None: not within budget)
    budget_min: float

    def at(self, minutes: float) -> float:
        """The share still not found after `minutes`."""
        share = 1.0
        for t, p in zip(self.times, self.probabilities, strict=True):
            if t <= minutes:
                share = p
        return share


def survival(cells: Sequence[CellResult], generator: str, budget_s: float) -> Survival:
    """Kaplan–Meier over every trial of `generator` against a bug: a finding is an event at
    its time, a miss is censored at the budget."""
    from scipy import stats

    budget_min = budget_s / 60
    mine = [c for c in cells if c.bug is not None and c.generator == generator and not c.error]
    found = [min(c.minutes or 0.0, budget_min) for c in mine if c.found]
    missed = [budget_min for c in mine if not c.found]
    if not found:
        return Survival(generator, len(mine), 0, (), (), None, budget_min)
    curve = stats.ecdf(stats.CensoredData(uncensored=found, right=missed)).sf
    times = tuple(float(t) for t in curve.quantiles)
    probabilities = tuple(float(p) for p in curve.probabilities)
    median = next((t for t, p in zip(times, probabilities, strict=True) if p <= 0.5), None)
    return Survival(generator, len(mine), len(found), times, probabilities, median, budget_min)


@dataclass(frozen=True)
class PairedBug:
    bug: str
    base_median: float | None  # bug_median: None when most of its trials missed
    other_median: float | None
    ratio: float | None  # base / other, when both found it
    p_value: float | None  # Mann–Whitney U, two-sided, on the trials' censored times
    a12: float | None  # the chance a trial of `other` is the sooner


@dataclass(frozen=True)
class Comparison:
    base: str
    other: str
    bugs: tuple[PairedBug, ...]
    median_ratio: float | None  # over the bugs both found
    both_found: int
    p_value: float | None  # every paired trial pooled
    a12: float | None


def _mwu(base: list[float], other: list[float]) -> tuple[float | None, float | None]:
    """(two-sided p, A12 of other over base) of scipy's Mann–Whitney U; None when a side has
    no trial."""
    if not base or not other:
        return None, None
    from scipy import stats

    if len(set(base) | set(other)) == 1:  # every time the same: no difference to test
        return 1.0, 0.5
    test = stats.mannwhitneyu(base, other, alternative="two-sided")
    return float(test.pvalue), float(test.statistic) / (len(base) * len(other))


def compare(cells: Sequence[CellResult], base: str, other: str, budget_s: float) -> Comparison:
    """Generator `other` against `base` on the bugs both ran (the same bugs and, trial by
    trial, the same campaign seeds)."""
    budget_min = budget_s / 60
    mine, theirs = _by_bug(cells, base), _by_bug(cells, other)
    rows = []
    pooled_a: list[float] = []
    pooled_b: list[float] = []
    for bug in sorted(set(mine) & set(theirs)):
        a, b = bug_median(mine[bug]), bug_median(theirs[bug])
        times_a, times_b = times_of(mine[bug], budget_min), times_of(theirs[bug], budget_min)
        pooled_a += times_a
        pooled_b += times_b
        p_value, a12 = _mwu(times_a, times_b)
        ratio = round(a / max(b, 0.01), 2) if a is not None and b is not None else None
        rows.append(PairedBug(bug, a, b, ratio, p_value, a12))
    median_ratio, both = paired_ratio(cells, base, other)
    p_value, a12 = _mwu(pooled_a, pooled_b)
    return Comparison(base, other, tuple(rows), median_ratio, both, p_value, a12)
