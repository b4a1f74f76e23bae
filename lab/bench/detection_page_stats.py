"""The detection page's figures beyond the table: the targets, throughput, the survival curves
(the numbers of the image beside the page, lab.bench.detection_figure) and the paired
comparison of generators, from what lab.bench.detection_stats computed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lab.bench.detection_pace import Pace
from lab.bench.detection_stats import Comparison, Survival
from lab.bench.detection_targets import Target

__all__ = [
    "comparison_lines",
    "pace_lines",
    "stats_json",
    "survival_lines",
    "target_lines",
]

_AT = (0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0, 60.0)


def _num(value: float | None, digits: int = 1, unit: str = "") -> str:
    return "–" if value is None else f"{value:.{digits}f}{unit}"


def target_lines(found: Sequence[Target]) -> list[str]:
    lines = [
        "## Targets",
        "",
        "| target | status | figure |",
        "|---|---|---|",
    ]
    for t in found:
        status = {"met": "**met**", "missed": "**missed**"}.get(t.status, t.status)
        note = f" ({t.note})" if t.note else ""
        lines.append(f"| {t.name} | {status} | {t.figure}{note} |")
    return [*lines, ""]


def pace_lines(found: Sequence[Pace]) -> list[str]:
    lines = [
        "## Throughput",
        "",
        "Per generator over its campaigns: runs and faults applied (from the runs' "
        "`schedule.jsonl`) per minute of campaign, the share of the campaigns' time spent in "
        "runs, and where the rest went (idle): from a campaign's start to its first run "
        "(median), between one run's end and the next one's start (mean), from its last run "
        "to its end (median), and the budget a campaign that found nothing left unused "
        "(median: it starts no run that would not fit in what is left).",
        "",
        "| generator | campaigns | runs | runs/min | faults | faults per min | in runs | start | "
        "between runs | end | budget unused |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in found:
        lines.append(
            f"| {p.generator} | {p.campaigns} | {p.runs} | {p.runs_per_min:.2f} | {p.faults} | "
            f"{p.faults_per_min:.1f} | {p.busy:.0%} | {_num(p.start_s, 1, ' s')} | "
            f"{_num(p.gap_s, 1, ' s')} | {_num(p.end_s, 1, ' s')} | "
            f"{_num(p.unused_s, 0, ' s')} |"
        )
    return [*lines, ""]


def survival_lines(curves: Sequence[Survival], figure: Path | None) -> list[str]:
    """The curves' numbers (and the image, when one was written beside the page)."""
    budget = max((c.budget_min for c in curves), default=0.0)
    at = [t for t in _AT if t < budget] + [budget]
    lines = [
        "## Time to first detection",
        "",
        "Every trial against a bug, per generator: a finding at its time, a miss censored at "
        "the budget (Kaplan–Meier, `scipy.stats.ecdf` on censored data). The curve is the "
        "share of trials that had not yet found their bug; its median is the first time it "
        "is at most one half (– when it never gets there within the budget).",
        "",
    ]
    if figure is not None:
        lines += [f"![Time to first detection, per generator]({figure.name})", ""]
    lines += [
        "| generator | trials | found | median | "
        + " | ".join(f"not yet at {t:g} min" for t in at)
        + " |",
        "|---|---|---|---|" + "---|" * len(at),
    ]
    for c in curves:
        shares = " | ".join(f"{c.at(t):.2f}" for t in at)
        lines.append(
            f"| {c.generator} | {c.trials} | {c.found} | {_num(c.median, 1, ' min')} | {shares} |"
        )
    return [*lines, ""]


def comparison_lines(comparisons: Sequence[Comparison]) -> list[str]:
    if not comparisons:
        return []
    lines = [
        "## Generators compared, bug by bug",
        "",
        "For each bug both generators ran, on the same campaign seeds: each one's median time "
        "to detection over its trials (– when most trials missed), their ratio (how many "
        "times faster the second found it), the Mann–Whitney U test on the trials' times (a "
        "miss counting as the budget; two-sided p) and the Vargha–Delaney A12 (the chance a "
        "trial of the second finds it sooner: 0.5 none, 0.56 small, 0.64 medium, 0.71 large "
        "difference). The summary's ratio is the median over the bugs both found.",
        "",
    ]
    for comp in comparisons:
        lines += [
            f"**{comp.other} against {comp.base}: "
            + (
                f"{comp.median_ratio:.1f}× faster over {comp.both_found} "
                f"bug{'s' if comp.both_found != 1 else ''} both found"
                if comp.median_ratio is not None
                else "no bug both found"
            )
            + f"; all trials: p = {_num(comp.p_value, 3)}, A12 = {_num(comp.a12, 2)}**",
            "",
            f"| bug | {comp.base} median | {comp.other} median | ratio | p | A12 |",
            "|---|---|---|---|---|---|",
        ]
        for b in comp.bugs:
            lines.append(
                f"| {b.bug} | {_num(b.base_median, 1, ' min')} | "
                f"{_num(b.other_median, 1, ' min')} | {_num(b.ratio, 1, '×')} | "
                f"{_num(b.p_value, 3)} | {_num(b.a12, 2)} |"
            )
        lines.append("")
    return lines


def stats_json(
    found: Sequence[Target],
    paces: Sequence[Pace],
    curves: Sequence[Survival],
    comparisons: Sequence[Comparison],
) -> dict[str, Any]:
    from dataclasses import asdict

    return {
        "targets": [asdict(t) for t in found],
        "throughput": [
            {**asdict(p), "runs_per_min": p.runs_per_min, "faults_per_min": p.faults_per_min}
            for p in paces
        ],
        "survival": [asdict(c) for c in curves],
        "comparisons": [asdict(c) for c in comparisons],
    }
