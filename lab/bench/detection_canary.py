"""Reached, triggered, detected (as Magma reports them): when a trial's bug was first run,
when it first did what the correct code would not, and whether the campaign saw it; for a
trial that missed its bug, which of the three failed.

Each campaign of the benchmark has a canary log of its own (zoo/canary.py writes it): one
JSON line per process and kind, `{"what": "reached" | "triggered", "t": <wall clock>, "pid",
"detail"}`. Only each process's first call of each kind is there, so the log says when the
bug was first reached or triggered, never how often; its times are wall clock, as the
campaign's start is.

    read_canary_log(path, began)   CanaryTimes: minutes from `began` to the first of each kind
    why_missed(cell)               None (found), or what failed: see MISSES
    stages(cells)                  "reached 3/3 (0.2 min), triggered 1/3 (4.1 min), detected 0/3"
    misses(cells)                  "2 reached, never triggered; 1 never reached"
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.bench.detection_results import CellResult

__all__ = [
    "MISSES",
    "CanaryTimes",
    "misses",
    "read_canary_log",
    "stages",
    "why_missed",
]

FAILED_TO_RUN = "failed to run"
NO_CANARY = "no canary"
NEVER_REACHED = "never reached"
NEVER_TRIGGERED = "reached, never triggered"
NOT_DETECTED = "triggered, not detected"
# What a miss can say, in the order of the stages: the campaign failed; the bug has no canary
# to ask; the schedule never ran the buggy code; it ran it but never provoked the bug; it
# provoked it, and the checker and the predictions did not see it.
MISSES = (FAILED_TO_RUN, NO_CANARY, NEVER_REACHED, NEVER_TRIGGERED, NOT_DETECTED)


@dataclass(frozen=True)
class CanaryTimes:
    reached: float | None = None  # minutes from the campaign's start
    triggered: float | None = None
    reached_detail: str = ""
    triggered_detail: str = ""


def read_canary_log(path: Path, began: dt.datetime) -> CanaryTimes:
    """The first `reached` and the first `triggered` of a canary log, in minutes from `began`
    (a time before it counts as 0); nothing for a log never written. A line cut short (a
    process killed as it wrote) or of another shape is passed over."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return CanaryTimes()
    first: dict[str, tuple[float, str]] = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            what, t = str(entry["what"]), float(entry["t"])
        except (ValueError, KeyError, TypeError):
            continue
        if what in ("reached", "triggered") and (what not in first or t < first[what][0]):
            first[what] = (t, str(entry.get("detail", "")))

    def minutes(what: str) -> float | None:
        if what not in first:
            return None
        return round(max(0.0, first[what][0] - began.timestamp()) / 60, 2)

    return CanaryTimes(
        reached=minutes("reached"),
        triggered=minutes("triggered"),
        reached_detail=first.get("reached", (0.0, ""))[1],
        triggered_detail=first.get("triggered", (0.0, ""))[1],
    )


def why_missed(cell: CellResult) -> str | None:
    """None for a trial that found its bug; else which stage failed (one of MISSES)."""
    if cell.found:
        return None
    if cell.error:
        return FAILED_TO_RUN
    if not cell.canary:
        return NO_CANARY
    if cell.reached is None and cell.triggered is None:
        return NEVER_REACHED
    if cell.triggered is None:
        return NEVER_TRIGGERED
    return NOT_DETECTED


def _median(values: Sequence[float]) -> str:
    return f" ({statistics.median(values):.1f} min)" if values else ""


def stages(cells: Sequence[CellResult]) -> str:
    """Reached, triggered and detected over a cell's trials, each with the median minutes of
    the trials that got there; `no canary` in place of the first two for a bug without one.
    A trial that triggered without a `reached` line counts as reached (its canary calls
    `triggered` only)."""
    ran = [c for c in cells if not c.error]
    found = [c.minutes for c in ran if c.found and c.minutes is not None]
    detected = f"detected {len(found)}/{len(ran)}{_median(found)}"
    if not ran or not all(c.canary for c in ran):
        return f"{NO_CANARY}, {detected}"
    reached = [
        min(t for t in (c.reached, c.triggered) if t is not None)
        for c in ran
        if c.reached is not None or c.triggered is not None
    ]
    triggered = [c.triggered for c in ran if c.triggered is not None]
    return (
        f"reached {len(reached)}/{len(ran)}{_median(reached)}, "
        f"triggered {len(triggered)}/{len(ran)}{_median(triggered)}, {detected}"
    )


def misses(cells: Sequence[CellResult]) -> str:
    """The cell's missed trials by what failed, most common first ("" when none missed);
    a finding whose canary never said `triggered` is named too (the canary, not the
    campaign, is then what to look at)."""
    counted = Counter(w for c in cells if (w := why_missed(c)) is not None)
    parts = [f"{n} {what}" for what, n in sorted(counted.items(), key=lambda x: -x[1])]
    silent = sum(c.found and c.canary and c.triggered is None for c in cells)
    if silent:
        parts.append(f"{silent} detected, canary never triggered")
    return "; ".join(parts)
