"""The page's sections on the cells (scenario × target × backend × mode): how often each held
and how sure that is, by night when there are several, and how long failovers took; from
the campaign view's collected tables (`campaign_job.CAMPAIGN_TABLES`)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from spark_reports.campaign_view import FAILOVER_BUCKETS, KEY, NEVER
from spark_reports.charts import Plot, bar_chart, interval_figure, line_figure
from spark_reports.html_page import Chart, Part, Section, Table, Text
from spark_reports.page_data import PageData

__all__ = ["cell_name", "failover_section", "held_rate_section"]

_MAX_SERIES = 8
_MAX_BARS_IN_TABLE = 3
_BUCKETS = [label for _, label in FAILOVER_BUCKETS] + [NEVER]

Row = dict[str, object]


def cell_name(row: Row) -> str:
    """A cell as the legends name it: `scenario · target · backend · mode`."""
    return " · ".join(str(row[k]) for k in KEY)


def _count(value: object) -> int:
    return int(value) if isinstance(value, int) else 0


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _chosen(cells: pa.Table) -> list[str]:
    """The cells with the most runs (at most `_MAX_SERIES`), named as in the legends."""
    rows = sorted(cells.to_pylist(), key=lambda r: (-_count(r["runs"]), cell_name(r)))
    return [cell_name(r) for r in rows[:_MAX_SERIES]]


def _nights_plot(nights: pa.Table, chosen: Sequence[str]) -> Plot:
    rows = [r for r in nights.to_pylist() if _count(r["runs"])]
    labels = sorted({str(r["night"]) for r in rows})
    series: dict[str, list[float | None]] = {}
    bands: dict[str, tuple[list[float | None], list[float | None]]] = {}
    for name in chosen:
        by_night = {str(r["night"]): r for r in rows if cell_name(r) == name}

        def column(key: str, by_night: dict[str, Row] = by_night) -> list[float | None]:
            return [_num(by_night.get(night, {}).get(key)) for night in labels]

        values = column("held_pct")
        if any(v is not None for v in values):
            series[name] = values
            bands[name] = (column("held_ci_low_pct"), column("held_ci_high_pct"))
    title = "Held rate by night (shaded: 95 % Wilson interval)"
    return line_figure(
        title,
        labels,
        series,
        "% held",
        empty=f"{title}: no judged run.",
        bands=bands,
        y_range=(0.0, 101.0),
    )


def _nights(nights: pa.Table, chosen: Sequence[str]) -> list[Part]:
    judged = [r for r in nights.to_pylist() if _count(r["runs"])]
    dated = sorted({str(r["night"]) for r in judged})
    if len(dated) < 2:
        which = f" ({dated[0]})" if dated else ""
        return [
            Text(
                f"All judged runs are from one night{which}, so there is no change over nights "
                "to show. A night is the UTC day its campaign started (campaign.json), else "
                "the day in the run folder's name."
            )
        ]
    shown = (*KEY, "night", "runs", "held", "held_pct", "held_ci_low_pct", "held_ci_high_pct")
    return [
        Chart("held rate by night", _nights_plot(nights, chosen)),
        Table("By night", nights.select([*shown, "campaigns"]), "No judged run.", (*KEY, "night")),
    ]


def held_rate_section(data: PageData) -> Section:
    """Per cell: held % and its 95 % interval (a chart when there are cells to compare),
    by night when there are several nights, and the violations per cell."""
    cells, nights = data.tables["campaign"], data.tables["campaign_nights"]
    rows = [
        (
            cell_name(r),
            float(r["held_pct"]),
            float(r["held_ci_low_pct"]),
            float(r["held_ci_high_pct"]),
        )
        for r in cells.to_pylist()
        if _count(r["runs"]) and r["held_pct"] is not None
    ]
    title = "Held rate by cell, with its 95 % interval"
    return Section(
        "Held rate by cell",
        (
            Text(
                "Held % is held / judged runs: any verdict but held counts against it. Its 95 % "
                "Wilson score interval says how far the rate can be trusted: 20 runs that all "
                "held give 83.9–100 %, 200 give 98.1–100 %."
            ),
            Chart(
                "held rate by cell",
                interval_figure(title, rows, "% held", empty=f"{title}: no judged run."),
            ),
            *_nights(nights, _chosen(cells)),
            Table(
                "Violations by cell",
                data.tables["campaign_violations"],
                "No judged run showed a violation.",
                (*KEY, "kind"),
            ),
        ),
    )


def _histogram(histogram: pa.Table) -> tuple[list[str], dict[str, list[float | None]]]:
    counts: dict[str, dict[str, int]] = {}
    for row in histogram.to_pylist():
        counts.setdefault(cell_name(row), {})[str(row["bucket"])] = _count(row["faults"])
    used = [b for b in _BUCKETS if any(b in c for c in counts.values())]
    return used, {name: [float(c.get(b, 0)) for b in used] for name, c in counts.items()}


def _histogram_parts(histogram: pa.Table, chosen: Sequence[str]) -> list[Part]:
    used, series = _histogram(histogram)
    if not used:
        return []
    by_cell = [
        {"cell": name, **dict(zip(used, values, strict=True))} for name, values in series.items()
    ]
    table = Table(
        "Faults by failover time", pa.Table.from_pylist(by_cell), "No fault.", ("cell",), "count"
    )
    drawn = {name: values for name, values in series.items() if name in chosen}
    bars = sum(1 for values in drawn.values() for v in values if v)
    if bars <= _MAX_BARS_IN_TABLE:
        return [table]  # a chart of so few bars shows nothing the table does not
    return [table, Chart("failover times", bar_chart("Failover times", used, drawn, "faults"))]


def failover_section(data: PageData) -> Section:
    """Per cell: failover percentiles, and the faults by failover time."""
    cells = data.tables["campaign"]
    faulted = cells.take(
        [
            i
            for i, r in enumerate(cells.to_pylist())
            if _count(r["failovers"]) + _count(r["failovers_never"])
        ]
    )
    figures = ("failovers", "failovers_never", "failover_p50_s", "failover_p90_s", "failover_max_s")
    return Section(
        "Failover times",
        (
            Text(
                "Over every fault of a cell's judged runs: the time from the fault to the next "
                "acknowledged send. A fault never followed by one is counted apart, not in the "
                "percentiles."
            ),
            Table("", faulted.select([*KEY, *figures]), "No judged run had a fault.", KEY),
            *_histogram_parts(data.tables["campaign_failover_histogram"], _chosen(cells)),
        ),
    )
