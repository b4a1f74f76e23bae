"""The detection page's survival curves as an image beside it (`detection.md` →
`detection-survival.svg`): per generator, the share of its trials that had not yet found
their bug after t minutes (Kaplan–Meier, lab.bench.detection_stats), up to the budget.
matplotlib (the `reports` extra) is imported here only; the SVG carries no date, so the same
figures make the same file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lab.bench.detection_stats import Survival

__all__ = ["figure_path", "write_survival_figure"]


def figure_path(page: Path) -> Path:
    return page.with_name(f"{page.stem}-survival.svg")


def write_survival_figure(curves: Sequence[Survival], path: Path) -> None:
    """Step curves, one per generator, from 1 at 0 minutes to the budget."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context({"svg.hashsalt": "lab-detection", "svg.fonttype": "none"}):
        fig = Figure(figsize=(6.4, 3.6))
        ax = fig.subplots()
        budget = max((c.budget_min for c in curves), default=1.0)
        for curve in curves:
            times = [0.0, *curve.times, budget]
            shares = [1.0, *curve.probabilities]
            shares.append(shares[-1])
            ax.step(
                times,
                shares,
                where="post",
                label=f"{curve.generator} ({curve.found}/{curve.trials} found)",
            )
        ax.set_xlim(0, budget)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("minutes from the campaign's start")
        ax.set_ylabel("trials not yet detected")
        ax.set_title("Time to first detection (Kaplan–Meier, censored at the budget)")
        ax.grid(True, alpha=0.3)
        if curves:
            ax.legend(loc="lower left")
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="svg", metadata={"Date": None})
