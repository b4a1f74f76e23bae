"""The detection benchmark's targets, evaluated on its results: each met or missed, with its
figure, or not measured (and why). A target measured under other conditions than it names (a
shorter budget, fewer trials, part of the zoo) is still evaluated, with a note saying so.

    targets(cells, named, zoo, budget_s)   [Target, …] in the order below

1. the whole zoo (at least 21 bugs), guided (`coverage`), 10-minute campaigns, at least 3
   trials: every bug found in at least 2 of 3 trials;
2. and the guided generator's median time to first detection (Kaplan–Meier, misses censored
   at the budget) at most 3 minutes;
3. reached / triggered / detected for every cell: every bug has a canary;
4. guided against random on the same bugs and seeds: at least 2× faster on the paired per-bug
   medians;
5. and never finding fewer bugs;
6. the bugs written after the generator found as often as the first set, within one bug;
7. `--named` run for the whole zoo.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from lab.bench.detection_results import CellResult, NamedResult
from lab.bench.detection_stats import paired_ratio, survival
from lab.bench.zoo import Bug

__all__ = ["GUIDED", "RANDOM", "Target", "targets"]

GUIDED = "coverage"
RANDOM = "random"
BUDGET_S = 600.0
ZOO_SIZE = 21  # at least: the zoo the targets are set for
TRIALS = 3
MEDIAN_MIN = 3.0
SPEED_UP = 2.0
Status = Literal["met", "missed", "not measured"]


@dataclass(frozen=True)
class Target:
    name: str
    status: Status
    figure: str
    note: str = ""  # the conditions it was measured under, where they differ from its own


def _status(ok: bool) -> Status:
    return "met" if ok else "missed"


def _found_by_bug(cells: Sequence[CellResult], generator: str) -> dict[str, tuple[int, int]]:
    """bug → (trials that found it, trials that ran)."""
    out: dict[str, tuple[int, int]] = {}
    for c in cells:
        if c.bug is not None and c.generator == generator and not c.error:
            found, ran = out.get(c.bug, (0, 0))
            out[c.bug] = (found + c.found, ran + 1)
    return out


def _conditions(found: dict[str, tuple[int, int]], zoo: Sequence[Bug], budget_s: float) -> str:
    """What differs from the conditions the first targets name (empty: none)."""
    notes = []
    if budget_s != BUDGET_S:
        notes.append(f"campaigns of {budget_s / 60:g} min, not {BUDGET_S / 60:g}")
    fewest = min((ran for _, ran in found.values()), default=0)
    if fewest < TRIALS:
        notes.append(f"{fewest} trial(s) of a bug, not {TRIALS}")
    if len(set(found) & {b.name for b in zoo}) < len(zoo):
        notes.append(f"{len(found)} of the zoo's {len(zoo)} bugs")
    if len(zoo) < ZOO_SIZE:
        notes.append(f"a zoo of {len(zoo)} bugs, not at least {ZOO_SIZE}")
    return "measured on " + ", ".join(notes) if notes else ""


def _every_bug(found: dict[str, tuple[int, int]], note: str) -> Target:
    name = f"every bug found by {GUIDED} in at least 2 of 3 trials"
    if not found:
        return Target(name, "not measured", f"no {GUIDED} trial")
    short = sorted(f"{bug} {k}/{n}" for bug, (k, n) in found.items() if 3 * k < 2 * n)
    figure = f"{len(found) - len(short)}/{len(found)} bugs"
    figure += f" (short: {', '.join(short)})" if short else ""
    return Target(name, _status(not short), figure, note)


def _median(cells: Sequence[CellResult], budget_s: float, note: str) -> Target:
    name = f"{GUIDED}'s median time to first detection ≤ {MEDIAN_MIN:g} min"
    if not any(c.generator == GUIDED and c.bug for c in cells):
        return Target(name, "not measured", f"no {GUIDED} trial")
    curve = survival(cells, GUIDED, budget_s)
    if curve.median is None:
        figure = f"over {budget_s / 60:g} min (fewer than half of {curve.trials} trials found)"
        return Target(name, "missed", figure, note)
    figure = f"{curve.median:.1f} min (Kaplan–Meier over {curve.trials} trials)"
    return Target(name, _status(curve.median <= MEDIAN_MIN), figure, note)


def _canaries(cells: Sequence[CellResult]) -> Target:
    bugs = {c.bug: c.canary for c in cells if c.bug is not None}
    name = "reached / triggered / detected for every cell"
    if not bugs:
        return Target(name, "not measured", "no trial against a bug")
    without = sorted(b for b, has in bugs.items() if not has)
    figure = f"{len(bugs) - len(without)}/{len(bugs)} bugs have a canary"
    figure += f" (none: {', '.join(without)})" if without else ""
    return Target(name, _status(not without), figure)


def _same_seeds(cells: Sequence[CellResult]) -> bool:
    seeds: dict[str, dict[str, set[int]]] = {}
    for c in cells:
        if c.bug is not None and c.generator in (GUIDED, RANDOM):
            seeds.setdefault(c.bug, {}).setdefault(c.generator, set()).add(c.seed)
    return all(len({frozenset(s) for s in by.values()}) == 1 for by in seeds.values())


def _faster(cells: Sequence[CellResult]) -> Target:
    name = f"{GUIDED} at least {SPEED_UP:g}× faster than {RANDOM} (paired per-bug medians)"
    generators = {c.generator for c in cells}
    if not {GUIDED, RANDOM} <= generators:
        return Target(name, "not measured", f"needs trials of both {RANDOM} and {GUIDED}")
    ratio, both = paired_ratio(cells, RANDOM, GUIDED)
    note = "" if _same_seeds(cells) else "the two were not run on the same campaign seeds"
    if ratio is None:
        return Target(name, "missed", "no bug found by both in most of its trials", note)
    figure = f"{ratio:.1f}× over {both} bug{'s' if both != 1 else ''} both found"
    return Target(name, _status(ratio >= SPEED_UP), figure, note)


def _not_fewer(cells: Sequence[CellResult]) -> Target:
    name = f"{GUIDED} never finds fewer bugs than {RANDOM}"
    guided, blind = _found_by_bug(cells, GUIDED), _found_by_bug(cells, RANDOM)
    if not guided or not blind:
        return Target(name, "not measured", f"needs trials of both {RANDOM} and {GUIDED}")
    common = set(guided) & set(blind)
    g = sum(guided[b][0] > 0 for b in common)
    r = sum(blind[b][0] > 0 for b in common)
    lost = sorted(b for b in common if blind[b][0] and not guided[b][0])
    figure = f"{GUIDED} {g}/{len(common)}, {RANDOM} {r}/{len(common)}"
    figure += f" (only {RANDOM} found: {', '.join(lost)})" if lost else ""
    return Target(name, _status(g >= r), figure)


def _after_set(cells: Sequence[CellResult], zoo: Sequence[Bug]) -> Target:
    name = f"the bugs written after the generator found by {GUIDED} as often (within one bug)"
    after = {b.name for b in zoo if b.after_generator} | {
        c.bug for c in cells if c.bug and c.after_generator
    }
    found = _found_by_bug(cells, GUIDED)
    first = {b: f for b, f in found.items() if b not in after}
    second = {b: f for b, f in found.items() if b in after}
    if not first or not second:
        return Target(name, "not measured", f"needs {GUIDED} trials of bugs of both sets")
    k1 = sum(k > 0 for k, _ in first.values())
    k2 = sum(k > 0 for k, _ in second.values())
    expected = k1 / len(first) * len(second)
    figure = f"after {k2}/{len(second)}, before {k1}/{len(first)} (as often: {expected:.1f})"
    return Target(name, _status(k2 >= expected - 1), figure)


def _named(named: Sequence[NamedResult], zoo: Sequence[Bug]) -> Target:
    name = "`--named` for the whole zoo"
    ran = {n.bug for n in named if n.bug is not None}
    missing = sorted(b.name for b in zoo if b.name not in ran)
    figure = f"{len(ran & {b.name for b in zoo})}/{len(zoo)} bugs against the named scenarios"
    if len(missing) <= 3 and missing:
        figure += f" (not: {', '.join(missing)})"
    return Target(name, _status(not missing), figure)


def targets(
    cells: Sequence[CellResult], named: Sequence[NamedResult], zoo: Sequence[Bug], budget_s: float
) -> list[Target]:
    found = _found_by_bug(cells, GUIDED)
    note = _conditions(found, zoo, budget_s)
    return [
        _every_bug(found, note),
        _median(cells, budget_s, note),
        _canaries(cells),
        _faster(cells),
        _not_fewer(cells),
        _after_set(cells, zoo),
        _named(named, zoo),
    ]
