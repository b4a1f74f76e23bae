"""The throughput table (P1) from its measurements: cells of repeated trials, each
configuration in % of the single node with its spread, which side was saturated in each
cell, and the seeds' ranges checked per client count.

The Java seed's claims, as a drop against the non-HA broker at the same client count:
SYNC,SYNC,ALL without coalescing-sync 62–95 %; with coalescing-sync NO_SYNC,NO_SYNC,ALL
25–60 % and WRITE_NO_SYNC,WRITE_NO_SYNC,ALL 10–90 %.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lab.bench.load import Cell

__all__ = [
    "SATURATED_AT",
    "SEED_RANGES",
    "Trials",
    "range_lines",
    "saturated",
    "saturation_lines",
    "share_lines",
]

SEED_RANGES: dict[str, tuple[float, float]] = {
    "SYNC,SYNC,ALL": (62.0, 95.0),
    "NO_SYNC,NO_SYNC,ALL +cs": (25.0, 60.0),
    "WRITE_NO_SYNC,WRITE_NO_SYNC,ALL +cs": (10.0, 90.0),
}
SATURATED_AT = 0.9
"""A side is saturated when it used this share of what it can use: a node or the load
process (each one event loop) 0.9 of a core; the machine 0.9 of all its cores."""


@dataclass(frozen=True)
class Trials:
    """The trials of one cell."""

    cells: tuple[Cell, ...]

    @property
    def rate(self) -> float:
        return sum(c.rate for c in self.cells) / len(self.cells)

    def share(self, baseline: Trials) -> tuple[float, float, float]:
        """Mean, lowest and highest trial in % of the baseline's mean."""
        base = baseline.rate
        if base <= 0:
            return (float("nan"),) * 3
        shares = [100 * c.rate / base for c in self.cells]
        return sum(shares) / len(shares), min(shares), max(shares)

    @property
    def spread_pct(self) -> float:
        """Highest minus lowest trial, in % of the mean."""
        rates = [c.rate for c in self.cells]
        return 100 * (max(rates) - min(rates)) / self.rate if self.rate > 0 else float("nan")


def saturated(cell: Cell, cores: int | None = None) -> str:
    """Which side set the figure: `broker` (its busiest node), `clients` (the load), both,
    `machine` (every core busy, no one side), or `-` (no CPU limit: the disk's syncs or the
    round trips set it)."""
    cores = cores or os.cpu_count() or 1
    _, node = cell.busiest_node()
    sides = [
        side
        for side, used in (("broker", node), ("clients", cell.load_cores))
        if used >= SATURATED_AT
    ]
    if sides:
        return "+".join(sides)
    if sum(cell.cores.values()) + cell.load_cores >= SATURATED_AT * cores:
        return "machine"
    return "-"


def _label_width(rows: Mapping[str, Mapping[int, Trials]]) -> int:
    return max(len(label) for label in rows)


def share_lines(
    rows: Mapping[str, Mapping[int, Trials]], baseline: str, clients: Sequence[int]
) -> list[str]:
    """The baseline in msg/s (± its spread), each other row in % of it (lowest–highest)."""
    width = _label_width(rows)
    lines = [f"{'clients':<{width}}  " + "  ".join(f"{f'{c}/{c}':>15}" for c in clients)]
    for label, row in rows.items():
        if label == baseline:
            cells = [f"{row[c].rate:>7,.0f}/s ±{row[c].spread_pct / 2:>3.0f}%" for c in clients]
        else:
            cells = []
            for c in clients:
                mean, low, high = row[c].share(rows[baseline][c])
                cells.append(f"{mean:>5.1f}% ({low:>3.0f}–{high:<3.0f})")
        lines.append(f"{label:<{width}}  " + "  ".join(f"{cell:>15}" for cell in cells))
    return lines


def saturation_lines(
    rows: Mapping[str, Mapping[int, Trials]], clients: Sequence[int], cores: int | None = None
) -> list[str]:
    """Per cell, the side saturated in most of its trials, and the busiest node's and the
    load's CPU (cores, mean over the trials)."""
    width = _label_width(rows)
    lines = [f"{'saturated':<{width}}  " + "  ".join(f"{f'{c}/{c}':>22}" for c in clients)]
    for label, row in rows.items():
        cells = []
        for c in clients:
            trials = row[c].cells
            verdicts = [saturated(cell, cores) for cell in trials]
            most = max(set(verdicts), key=verdicts.count)
            node = sum(cell.busiest_node()[1] for cell in trials) / len(trials)
            load = sum(cell.load_cores for cell in trials) / len(trials)
            cells.append(f"{most} (node {node:.2f}, load {load:.2f})")
        lines.append(f"{label:<{width}}  " + "  ".join(f"{cell:>22}" for cell in cells))
    return lines


def range_lines(
    rows: Mapping[str, Mapping[int, Trials]], baseline: str, clients: Sequence[int]
) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """For each configuration the seeds give a range for: its drop per client count,
    within or outside; and (within, measured) per configuration."""
    lines: list[str] = []
    tally: dict[str, tuple[int, int]] = {}
    for label, (low, high) in SEED_RANGES.items():
        if label not in rows:
            continue
        parts, within = [], 0
        for c in clients:
            drop = 100 - rows[label][c].share(rows[baseline][c])[0]
            inside = low <= drop <= high
            within += inside
            parts.append(f"{c}/{c} {drop:.0f}% {'within' if inside else 'OUTSIDE'}")
        tally[label] = (within, len(clients))
        lines.append(
            f"{label}: drop {low:.0f}–{high:.0f}% in the seeds; measured "
            + ", ".join(parts)
            + f" ({within}/{len(clients)} within)"
        )
    return lines, tally
