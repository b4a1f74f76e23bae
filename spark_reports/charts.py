"""Charts as PNG bytes (matplotlib's Agg canvas, no pyplot, no global backend).

`bar_figure` and `line_figure` first decide whether a chart is worth drawing
(`figure_kind`): with nothing to draw they return a sentence saying so, and with a single
value they return that value in words; only otherwise a PNG.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as _Figure
from matplotlib.ticker import MaxNLocator

__all__ = [
    "Bands",
    "FigureKind",
    "Plot",
    "Series",
    "bar_chart",
    "bar_figure",
    "figure_kind",
    "in_words",
    "interval_chart",
    "interval_figure",
    "line_chart",
    "line_figure",
]

Series = Mapping[str, Sequence[float | None]]
"""Named series over the same x labels; None leaves a gap."""
Bands = Mapping[str, tuple[Sequence[float | None], Sequence[float | None]]]
"""Per series name, the low and high bound at each x label (None: no band there)."""


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


def _png(figure: _Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
    return buffer.getvalue()


def line_chart(
    title: str,
    x_labels: Sequence[str],
    series: Series,
    y_label: str,
    *,
    log_y: bool = False,
    bands: Bands | None = None,
    y_range: tuple[float, float] | None = None,
) -> bytes:
    """One line per series over categorical x labels; a series' band (low, high), when given,
    is shaded behind its line (an interval, such as a confidence interval)."""
    figure = _Figure(figsize=(8.0, 4.2))
    axes = figure.add_subplot()
    positions = list(range(len(x_labels)))
    for name, values in series.items():
        points = [(x, v) for x, v in zip(positions, values, strict=True) if v is not None]
        if not points:
            continue
        (line,) = axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
        low, high = (bands or {}).get(name, ((), ()))
        spans = [
            (x, lo, hi)
            for x, lo, hi in zip(positions, low, high, strict=False)
            if lo is not None and hi is not None
        ]
        if spans:
            xs, lows, highs = zip(*spans, strict=True)
            axes.fill_between(xs, lows, highs, color=line.get_color(), alpha=0.15, linewidth=0)
            axes.errorbar(
                xs,
                [(lo + hi) / 2 for lo, hi in zip(lows, highs, strict=True)],
                yerr=[(hi - lo) / 2 for lo, hi in zip(lows, highs, strict=True)],
                fmt="none",
                ecolor=line.get_color(),
                alpha=0.5,
                capsize=3,
            )
    _label_ticks(axes, x_labels)
    axes.set_title(title)
    axes.set_ylabel(y_label)
    if y_range is not None:
        axes.set_ylim(*y_range)
    if log_y:
        axes.set_yscale("log")
    axes.grid(True, alpha=0.3)
    if series:
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(figure)


def bar_chart(title: str, x_labels: Sequence[str], series: Series, y_label: str) -> bytes:
    """Grouped bars: one group per x label, one bar per series."""
    figure = _Figure(figsize=(8.0, 4.2))
    axes = figure.add_subplot()
    count = max(1, len(series))
    width = 0.8 / count
    for number, (name, values) in enumerate(series.items()):
        xs = [x + (number - (count - 1) / 2) * width for x in range(len(x_labels))]
        heights = [0.0 if v is None else v for v in values]
        axes.bar(xs, heights, width=width, label=name)
    _label_ticks(axes, x_labels)
    if all(float(v).is_integer() for values in series.values() for v in values if v is not None):
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.axhline(0.0, color="black", linewidth=0.6)
    axes.set_title(title)
    axes.set_ylabel(y_label)
    axes.grid(True, axis="y", alpha=0.3)
    if series:
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(figure)


Plot = bytes | str
"""What a chart becomes on the page: a PNG, or a sentence when a chart would say nothing."""
FigureKind = Literal["empty", "number", "chart"]


def _points(series: Series, *, zero_is_empty: bool) -> list[tuple[str, int, float]]:
    return [
        (name, x, value)
        for name, values in series.items()
        for x, value in enumerate(values)
        if value is not None and not (zero_is_empty and value == 0)
    ]


def figure_kind(series: Series, *, zero_is_empty: bool = False, lines: bool = False) -> FigureKind:
    """`empty` when there is no value (with `zero_is_empty`, no value but zero: counts of
    nothing); `number` for a single bar, or lines with values at one x label only;
    else `chart`."""
    points = _points(series, zero_is_empty=zero_is_empty)
    if not points:
        return "empty"
    if lines:
        return "number" if len({x for _, x, _ in points}) == 1 else "chart"
    bars = sum(1 for values in series.values() for v in values if v is not None)
    return "number" if bars == 1 else "chart"


def _number(value: float) -> str:
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def in_words(title: str, x_labels: Sequence[str], series: Series, unit: str) -> str:
    """The chart's values as a sentence: `title: 3.2 s (label, series); …`."""
    parts = []
    for name, values in series.items():
        for label, value in zip(x_labels, values, strict=True):
            if value is not None:
                where = ", ".join(p for p in (label.replace("\n", " "), name) if p)
                parts.append(f"{_number(value)} {unit} ({where})")
    return f"{title}: {'; '.join(parts)}."


def bar_figure(
    title: str,
    x_labels: Sequence[str],
    series: Series,
    y_label: str,
    *,
    empty: str,
    zero_is_empty: bool = False,
) -> Plot:
    """`bar_chart`, or `empty` when there is nothing to draw, or the one value in words."""
    kind = figure_kind(series, zero_is_empty=zero_is_empty)
    if kind == "empty":
        return empty
    if kind == "number":
        return in_words(title, x_labels, series, y_label)
    return bar_chart(title, x_labels, series, y_label)


def line_figure(
    title: str,
    x_labels: Sequence[str],
    series: Series,
    y_label: str,
    *,
    empty: str,
    log_y: bool = False,
    bands: Bands | None = None,
    y_range: tuple[float, float] | None = None,
) -> Plot:
    """`line_chart`, or `empty` when there is nothing to draw, or the values in words when
    they sit at a single x label (one point per line is no line)."""
    kind = figure_kind(series, lines=True)
    if kind == "empty":
        return empty
    if kind == "number":
        return in_words(title, x_labels, series, y_label)
    return line_chart(title, x_labels, series, y_label, log_y=log_y, bands=bands, y_range=y_range)


Interval = tuple[str, float, float, float]
"""A label, a value and the low and high bound of its interval."""


def interval_chart(title: str, rows: Sequence[Interval], x_label: str) -> bytes:
    """One row per label: the value as a dot and its interval as a bar (a forest plot), the
    first row at the top, on 0–100."""
    figure = _Figure(figsize=(8.0, 0.9 + 0.42 * len(rows)))
    axes = figure.add_subplot()
    ys = list(range(len(rows)))[::-1]
    for y, (_, value, low, high) in zip(ys, rows, strict=True):
        axes.plot([low, high], [y, y], color="#1f77b4", linewidth=2.5, alpha=0.6)
        axes.plot([value], [y], "o", color="#1f77b4")
    axes.set_yticks(ys, [label.replace(" - ", "\n") for label, *_ in rows], fontsize="small")
    axes.set_xlim(0.0, 101.0)
    axes.set_ylim(-0.6, len(rows) - 0.4)
    axes.set_title(title)
    axes.set_xlabel(x_label)
    axes.grid(True, axis="x", alpha=0.3)
    return _png(figure)


def interval_figure(title: str, rows: Sequence[Interval], x_label: str, *, empty: str) -> Plot:
    """`interval_chart` when there are two rows or more to compare; one row in words;
    `empty` without any."""
    if not rows:
        return empty
    if len(rows) == 1:
        label, value, low, high = rows[0]
        return f"{title}: {_number(value)} {x_label} ({label}; {_number(low)}–{_number(high)})."
    return interval_chart(title, rows, x_label)
