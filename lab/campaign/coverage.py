"""Behaviour coverage over a campaign: after each run, how many distinct behaviours its cell
and the whole campaign have shown (lab.campaign.behaviour), and what the summary says of it.

    coverage = Coverage()
    point = coverage.add(run, cell, origin, parent, verdict, features)   # a CoveragePoint
    coverage_lines(points, records)     the summary's lines: growth over the runs, each cell
                                        (and those that stopped finding anything new), and
                                        for each failure the run — and schedule — that first
                                        reached it

A behaviour counts once per cell (scenario · target · backend · mode): the campaign's total
is the sum over its cells. `coverage.jsonl` holds one point a line, in the order the runs
were recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.campaign.plan import Cell
from lab.campaign.tasks import RunRecord
from lab.campaign.windows import windows_of
from lab.ground.faultops import ops_from_json

__all__ = [
    "STALLED_AFTER",
    "Coverage",
    "CoveragePoint",
    "cell_json",
    "cell_of",
    "coverage_lines",
]

STALLED_AFTER = 5  # runs of a cell in a row with nothing new: the cell has stopped finding


def cell_json(cell: Cell) -> dict[str, str]:
    return {
        "scenario": cell.scenario,
        "target": cell.target,
        "backend": cell.backend,
        "mode": cell.mode,
    }


def cell_of(raw: Mapping[str, Any]) -> Cell:
    return Cell(str(raw["scenario"]), str(raw["target"]), str(raw["backend"]), str(raw["mode"]))


@dataclass(frozen=True)
class CoveragePoint:
    """Coverage just after run `run`: what it showed, what of it was new to its cell, and the
    distinct behaviours its cell and the campaign have shown so far."""

    run: int
    cell: Cell
    origin: str  # seed | fresh | directed | an operator | replay
    parent: int | None
    verdict: str
    features: tuple[str, ...]
    new: tuple[str, ...]
    behaviours: int
    cell_behaviours: int

    def to_json(self) -> dict[str, Any]:
        return {
            "v": 1,
            "run": self.run,
            "cell": cell_json(self.cell),
            "origin": self.origin,
            "parent": self.parent,
            "verdict": self.verdict,
            "new": list(self.new),
            "behaviours": self.behaviours,
            "cell_behaviours": self.cell_behaviours,
            "features": list(self.features),
        }

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> CoveragePoint:
        parent = raw.get("parent")
        return CoveragePoint(
            run=int(raw["run"]),
            cell=cell_of(raw["cell"]),
            origin=str(raw["origin"]),
            parent=None if parent is None else int(parent),
            verdict=str(raw.get("verdict", "")),
            features=tuple(str(f) for f in raw.get("features", ())),
            new=tuple(str(f) for f in raw.get("new", ())),
            behaviours=int(raw["behaviours"]),
            cell_behaviours=int(raw["cell_behaviours"]),
        )


class Coverage:
    """The behaviours seen so far, by cell."""

    def __init__(self) -> None:
        self.seen: dict[Cell, set[str]] = {}

    @property
    def total(self) -> int:
        return sum(len(s) for s in self.seen.values())

    def add(
        self,
        run: int,
        cell: Cell,
        origin: str,
        parent: int | None,
        verdict: str,
        features: Iterable[str],
    ) -> CoveragePoint:
        seen = self.seen.setdefault(cell, set())
        shown = tuple(sorted(set(features)))
        new = tuple(f for f in shown if f not in seen)
        seen.update(new)
        return CoveragePoint(run, cell, origin, parent, verdict, shown, new, self.total, len(seen))


def read_points(path: Path) -> list[CoveragePoint]:
    """coverage.jsonl's points (none when there is no file; a torn last line is skipped)."""
    if not path.is_file():
        return []
    points = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            points.append(CoveragePoint.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            continue
    return points


def _growth(points: Sequence[CoveragePoint]) -> str:
    """Distinct behaviours after the first run, then at doublings of the run count."""
    marks = sorted({1, *(2**k for k in range(1, 20) if 2**k < len(points)), len(points)})
    shown = [f"{points[m - 1].behaviours} after {m}" for m in marks]
    return f"coverage: {points[-1].behaviours} distinct behaviours ({', '.join(shown)} runs)"


def _cell_line(cell: Cell, points: Sequence[CoveragePoint]) -> str:
    last_new = max((i for i, p in enumerate(points) if p.new), default=-1)
    quiet = len(points) - 1 - last_new
    said = f"cell {cell}: {points[-1].cell_behaviours} behaviours in {len(points)} runs"
    if quiet >= STALLED_AFTER:
        return f"{said}; stalled: nothing new in its last {quiet} runs"
    if last_new >= 0:
        return f"{said}; last new at run {points[last_new].run}"
    return said


def _lineage(run: int, by_run: Mapping[int, CoveragePoint]) -> str:
    """How a run was made: `workload of shift of fresh 3`, back to its first ancestor."""
    steps: list[str] = []
    point = by_run.get(run)
    while point is not None and point.parent is not None and len(steps) < 8:
        steps.append(point.origin)
        point = by_run.get(point.parent)
    base = "" if point is None else f"{point.origin} run {point.run}"
    return " of ".join([*steps, base]) if base else " of ".join(steps)


def _schedule(folder: Path) -> str:
    try:
        spec = json.loads((folder / "spec.json").read_text(encoding="utf-8"))
        windows = windows_of(ops_from_json(list(spec.get("schedule", []))))
    except (OSError, ValueError, KeyError, TypeError):
        return "(no spec.json)"
    return "; ".join(str(w) for w in windows) or "(no faults)"


def coverage_lines(
    points: Sequence[CoveragePoint], records: Sequence[RunRecord], campaign_dir: Path | None
) -> list[str]:
    if not points:
        return []
    lines = [_growth(points)]
    by_cell: dict[Cell, list[CoveragePoint]] = {}
    for point in points:
        by_cell.setdefault(point.cell, []).append(point)
    lines.extend(_cell_line(cell, found) for cell, found in sorted(by_cell.items(), key=str))
    by_run = {p.run: p for p in points}
    firsts: dict[str, RunRecord] = {}
    for record in sorted(records, key=lambda r: r.number):
        if record.failure and record.kind == "fresh":
            firsts.setdefault(record.failure, record)
    for failure, record in firsts.items():
        made = _lineage(record.number, by_run) or record.kind
        schedule = (
            _schedule(campaign_dir / record.folder)
            if campaign_dir is not None and record.folder
            else "(no run folder)"
        )
        lines.append(
            f"failure {failure} ({', '.join(record.violations)}) first reached by run "
            f"{record.number} ({made}): {schedule}"
        )
    return lines
