"""How fast each generator works the machine: runs and faults per minute of campaign, and where
a campaign's time goes that is not a run's — idle: its start before the first run, the gaps
between runs, its end after the last, and the budget a campaign that found nothing left
unused (it starts no run that would not fit in what is left).

    paces(cells, generators, budget_s)   one Pace per generator, over its campaigns that ran
    pace_line(paces)                     "throughput: random 2.3 runs/min, 16.1 faults per min …"
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from lab.bench.detection_results import CellResult

__all__ = ["Pace", "pace_line", "paces"]


@dataclass(frozen=True)
class Pace:
    generator: str
    campaigns: int
    runs: int
    faults: int
    minutes: float  # the campaigns' wall time, start to end
    run_minutes: float  # the runs' own time
    start_s: float | None  # median seconds from a campaign's start to its first run's start
    gap_s: float | None  # mean seconds between one run's end and the next one's start
    end_s: float | None  # median seconds from a campaign's last run's end to its own end
    unused_s: float | None  # median budget left by the campaigns that found nothing

    @property
    def runs_per_min(self) -> float:
        return self.runs / self.minutes if self.minutes else 0.0

    @property
    def faults_per_min(self) -> float:
        return self.faults / self.minutes if self.minutes else 0.0

    @property
    def busy(self) -> float:
        """The share of the campaigns' time spent in runs (the rest is idle: a campaign's
        start, the gaps between its runs, its end)."""
        return min(1.0, self.run_minutes / self.minutes) if self.minutes else 0.0


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def paces(cells: Sequence[CellResult], generators: Sequence[str], budget_s: float) -> list[Pace]:
    """Per generator, over every campaign of it that ran (the control's too)."""
    out = []
    for generator in generators:
        ran = [c for c in cells if c.generator == generator and c.campaign_s and not c.error]
        starts = [c.first_run_s for c in ran if c.first_run_s is not None]
        gaps = sum(max(0, c.runs - 1) for c in ran)
        ends = [c.end_s for c in ran if c.end_s is not None]
        unused = [max(0.0, budget_s - (c.campaign_s or 0.0)) for c in ran if not c.found]
        out.append(
            Pace(
                generator=generator,
                campaigns=len(ran),
                runs=sum(c.runs for c in ran),
                faults=sum(c.faults for c in ran),
                minutes=sum(c.campaign_s or 0.0 for c in ran) / 60,
                run_minutes=sum(c.run_s for c in ran) / 60,
                start_s=_median(starts),
                gap_s=sum(c.gaps_s for c in ran) / gaps if gaps else None,
                end_s=_median(ends),
                unused_s=_median(unused),
            )
        )
    return out


def pace_line(found: Sequence[Pace]) -> str:
    parts = []
    for pace in found:
        if not pace.campaigns:
            parts.append(f"{pace.generator} no campaign ran")
            continue
        idle = [
            f"{what} {value:.1f} s"
            for what, value in (
                ("start", pace.start_s),
                ("between runs", pace.gap_s),
                ("end", pace.end_s),
                ("budget unused", pace.unused_s),
            )
            if value is not None
        ]
        parts.append(
            f"{pace.generator} {pace.runs_per_min:.2f} runs/min, "
            f"{pace.faults_per_min:.1f} faults per min (runs {pace.busy:.0%} of campaign time"
            + (f"; idle: {', '.join(idle)}" if idle else "")
            + ")"
        )
    return "throughput: " + "; ".join(parts)
