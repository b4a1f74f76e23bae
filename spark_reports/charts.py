"""Charts as PNG bytes (matplotlib's Agg canvas, no pyplot, no global backend)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["Series", "bar_chart", "line_chart"]

Series = Mapping[str, Sequence[float | None]]
"""Named series over the same x labels; None leaves a gap."""


def _label_ticks(axes: Any, x_labels: Sequence[str]) -> None:
    """Category labels that stay readable: slanted when long or many, wrapped at ' - '."""
    labels = [label.replace(" - ", "\n") for label in x_labels]
    slanted = len(labels) > 4 or any(
        len(line) > 14 for label in labels for line in label.split("\n")
    )
    axes.set_xticks(list(range(len(labels))), labels, fontsize="small")
    if slanted:
        for tick in axes.get_xticklabels():
            tick.set_rotation(35)
            tick.set_horizontalalignment("right")


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
    return buffer.getvalue()


def line_chart(
    title: str, x_labels: Sequence[str], series: Series, y_label: str, *, log_y: bool = False
) -> bytes:
    """One line per series over categorical x labels."""
    figure = Figure(figsize=(8.0, 4.2))
    axes = figure.add_subplot()
    positions = list(range(len(x_labels)))
    for name, values in series.items():
        points = [(x, v) for x, v in zip(positions, values, strict=True) if v is not None]
        if points:
            axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
    _label_ticks(axes, x_labels)
    axes.set_title(title)
    axes.set_ylabel(y_label)
    if log_y:
        axes.set_yscale("log")
    axes.grid(True, alpha=0.3)
    if series:
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(figure)


def bar_chart(title: str, x_labels: Sequence[str], series: Series, y_label: str) -> bytes:
    """Grouped bars: one group per x label, one bar per series."""
    figure = Figure(figsize=(8.0, 4.2))
    axes = figure.add_subplot()
    count = max(1, len(series))
    width = 0.8 / count
    for number, (name, values) in enumerate(series.items()):
        xs = [x + (number - (count - 1) / 2) * width for x in range(len(x_labels))]
        heights = [0.0 if v is None else v for v in values]
        axes.bar(xs, heights, width=width, label=name)
    _label_ticks(axes, x_labels)
    axes.axhline(0.0, color="black", linewidth=0.6)
    axes.set_title(title)
    axes.set_ylabel(y_label)
    axes.grid(True, axis="y", alpha=0.3)
    if series:
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(figure)
