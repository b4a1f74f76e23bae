"""The detection benchmark's text: the table a terminal shows and the headline, its last line.

    table(cells, shrinks, named, generators)   bug × generator, the bugs written before the
                                               generator apart from those written after
    headline(cells, generators, budget_s)      "detection: random 7/13 found, median 3.1 min;
                                               coverage 12/13, median 1.2 min (2.6x) (…)"
    named_summary(named)                       how many bugs the named scenarios caught

Under each bug, a line per generator says reached / triggered / detected over its trials
(lab.bench.detection_canary) and, for the trials that missed, which stage failed.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from lab.bench.detection_canary import misses, stages
from lab.bench.detection_results import CellResult, NamedResult, ShrinkResult
from lab.bench.detection_stats import paired_ratio

__all__ = [
    "bug_sets",
    "headline",
    "median_minutes",
    "named_summary",
    "sets_of",
    "table",
]

SETS = ("before", "after")  # the bugs written before the generator was settled, and after


def median_minutes(cells: Iterable[CellResult]) -> float | None:
    found = [c.minutes for c in cells if c.found and c.minutes is not None]
    return round(statistics.median(found), 2) if found else None


def sets_of(cells: Sequence[CellResult]) -> dict[str, list[CellResult]]:
    """The trials against a bug by set: `before` and `after` the generator (the control's
    are in neither)."""
    return {
        "before": [c for c in cells if c.bug is not None and not c.after_generator],
        "after": [c for c in cells if c.bug is not None and c.after_generator],
    }


def bug_sets(cells: Sequence[CellResult]) -> bool:
    """Whether any trial is of a bug written after the generator (then each set is shown)."""
    return any(c.bug is not None and c.after_generator for c in cells)


def _bugs_found(cells: Sequence[CellResult], generator: str) -> tuple[int, int]:
    """(bugs found in at least one trial, bugs) for `generator`, the control left out."""
    by_bug: dict[str, bool] = {}
    for c in cells:
        if c.bug is not None and c.generator == generator:
            by_bug[c.bug] = by_bug.get(c.bug, False) or c.found
    return sum(by_bug.values()), len(by_bug)


def headline(cells: Sequence[CellResult], generators: Sequence[str], budget_s: float) -> str:
    """`detection: random 7/12 found, median 3.1 min; coverage 12/12, median 1.2 min (2.6x)`:
    per generator the bugs found in at least one trial — in each set, `12/13 found before,
    7/8 after`, when some bugs were written after the generator — and the median time to
    detection over the trials that found one; the ratio is the median over the bugs both
    found (in most of their trials) of the first generator's time over the other's: how many
    times faster the other found them."""
    parts: list[str] = []
    split = sets_of(cells) if bug_sets(cells) else None
    for i, generator in enumerate(generators):
        found_word = " found" if i == 0 else ""
        if split is None:
            found, total = _bugs_found(cells, generator)
            counts = f"{found}/{total}{found_word}"
        else:
            (k1, n1), (k2, n2) = (_bugs_found(split[s], generator) for s in SETS)
            counts = f"{k1}/{n1}{found_word} before, {k2}/{n2} after"
        median = median_minutes(c for c in cells if c.bug and c.generator == generator)
        shown = "none found" if median is None else f"median {median:.1f} min"
        part = f"{generator} {counts}, {shown}"
        ratio, _ = paired_ratio(cells, generators[0], generator) if i else (None, 0)
        if ratio is not None:
            part += f" ({ratio:.1f}x)"
        parts.append(part)
    trials = max((c.trial for c in cells), default=0)
    return (
        f"detection: {'; '.join(parts)} (campaigns of {budget_s / 60:g} min, "
        f"{trials} trial{'s' if trials != 1 else ''} each)"
    )


def named_summary(named: Sequence[NamedResult]) -> str:
    """How many bugs the named scenarios caught: a bug is caught when a scenario fails with it
    that held on the tree without a bug (a scenario failing there too catches nothing)."""
    clean_held = {n.scenario for n in named if n.bug is None and n.verdict == "held"}
    clean = [n for n in named if n.bug is None]
    bugs = {n.bug for n in named if n.bug is not None}
    caught = {n.bug for n in named if n.bug and n.failed and n.scenario in clean_held}
    return (
        f"named scenarios caught {len(caught)}/{len(bugs)} bugs "
        f"({len(clean_held)}/{len(clean)} held without a bug)"
    )


def _cell_text(cells: list[CellResult], shrink: ShrinkResult | None) -> str:
    found = [c for c in cells if c.found]
    errors = [c for c in cells if c.error]
    text = f"{len(found)}/{len(cells)}"
    median = median_minutes(found)
    if median is not None:
        runs = statistics.median(c.runs for c in found)
        text += f" {median:.1f} min {runs:g} runs"
    else:
        text += f" ({sum(c.runs for c in cells)} runs)"
    if errors:
        text += f" ({len(errors)} failed to run)"
    if shrink is not None:
        text += f", {shrink.shown()}"
    return text


def _rows(
    rows: Sequence[tuple[str, str]],
    cells: Sequence[CellResult],
    shrinks: Sequence[ShrinkResult],
    named: Sequence[NamedResult],
    generators: Sequence[str],
    width: int,
) -> list[str]:
    lines = []
    for row in rows:
        name, design = row
        texts = []
        for generator in generators:
            mine = [c for c in cells if c.row == row and c.generator == generator]
            shrink = next((s for s in shrinks if s.bug == name and s.generator == generator), None)
            texts.append(f"{_cell_text(mine, shrink) if mine else '-':<34}")
        lines.append(f"{name:<{width}}  {design:<16}  " + "  ".join(texts))
        for generator in generators:
            mine = [c for c in cells if c.row == row and c.generator == generator]
            if mine and name != "(no bug)":
                missed = misses(mine)
                lines.append(
                    f"{'':<{width}}  {generator}: {stages(mine)}"
                    + (f"; misses: {missed}" if missed else "")
                )
        kinds = sorted({k for c in cells if c.row == row and c.found for k in c.kinds})
        if kinds:
            lines.append(f"{'':<{width}}  kinds seen: {', '.join(kinds)}")
        for error in sorted({c.error for c in cells if c.row == row and c.error}):
            lines.append(f"{'':<{width}}  a campaign failed: {error}")
        mine_named = [n for n in named if n.row == row]
        if mine_named:
            failed = [
                f"{n.label} {n.scenario} ({', '.join(n.kinds) or n.verdict})"
                for n in mine_named
                if n.failed
            ]
            unseen = [n.label for n in mine_named if not n.failed and n.triggered]
            odd = [
                f"{n.label} {n.verdict}" for n in mine_named if n.verdict in ("refused", "error")
            ]
            lines.append(
                f"{'':<{width}}  named: {len(failed)}/{len(mine_named)} fail"
                + (f": {'; '.join(failed)}" if failed else "")
                + (f" [{'; '.join(odd)}]" if odd else "")
                + (f"; held though triggered: {', '.join(unseen)}" if unseen else "")
            )
    return lines


def table(
    cells: Sequence[CellResult],
    shrinks: Sequence[ShrinkResult],
    named: Sequence[NamedResult],
    generators: Sequence[str],
) -> list[str]:
    """bug × generator (found k/trials, median minutes and runs to detection, the shrink),
    reached / triggered / detected per generator, the kinds seen, and with named runs which
    scenarios failed with the bug. With bugs written after the generator, each set has its
    own part, headed by its counts."""
    rows = list(dict.fromkeys([*(c.row for c in cells), *(n.row for n in named)]))
    width = max([len(name) for name, _ in rows] + [3])
    lines = [f"{'bug':<{width}}  {'design':<16}  " + "  ".join(f"{g:<34}" for g in generators)]
    if not bug_sets(cells):
        return lines + _rows(rows, cells, shrinks, named, generators, width)
    after = {c.row for c in cells if c.after_generator}
    control = [r for r in rows if r[0] == "(no bug)"]
    for label, part in (
        ("written before the generator", [r for r in rows if r not in after and r not in control]),
        ("written after the generator", [r for r in rows if r in after]),
        ("the tree without a bug", control),
    ):
        if part:
            lines.append(f"-- {label} ({len(part)})")
            lines += _rows(part, cells, shrinks, named, generators, width)
    return lines
