"""The campaign view's section of the report page, from its collected tables
(`campaign_job.CAMPAIGN_TABLES`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from spark_reports.campaign_view import FAILOVER_BUCKETS, KEY, NEVER
from spark_reports.charts import Plot, bar_figure, line_figure
from spark_reports.html_page import Section, split_columns

__all__ = ["campaign_section"]

_MAX_SERIES = 8
_BUCKETS = [label for _, label in FAILOVER_BUCKETS] + [NEVER]

Row = dict[str, object]


def _name(row: Row) -> str:
    return " · ".join(str(row[k]) for k in KEY)


def _count(value: object) -> int:
    return int(value) if isinstance(value, int) else 0


def _chosen(groups: pa.Table) -> list[str]:
    """The groups with the most runs (at most `_MAX_SERIES`), named as in the legends."""
    rows = sorted(groups.to_pylist(), key=lambda r: (-_count(r["runs"]), _name(r)))
    return [_name(r) for r in rows[:_MAX_SERIES]]


def _nights_plot(nights: pa.Table, chosen: Sequence[str]) -> Plot:
    rows = [r for r in nights.to_pylist() if _count(r["runs"])]
    labels = sorted({str(r["night"]) for r in rows})
    series: dict[str, list[float | None]] = {}
    bands: dict[str, tuple[list[float | None], list[float | None]]] = {}
    for name in chosen:
        by_night = {str(r["night"]): r for r in rows if _name(r) == name}

        def column(key: str, by_night: dict[str, Row] = by_night) -> list[float | None]:
            values = [by_night.get(night, {}).get(key) for night in labels]
            return [float(v) if isinstance(v, int | float) else None for v in values]

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


def _failover_plot(histogram: pa.Table, chosen: Sequence[str]) -> Plot:
    counts: dict[str, dict[str, int]] = {}
    for row in histogram.to_pylist():
        counts.setdefault(_name(row), {})[str(row["bucket"])] = _count(row["faults"])
    used = [b for b in _BUCKETS if any(b in c for c in counts.values())]
    series: dict[str, list[float | None]] = {
        name: [float(counts[name].get(b, 0)) for b in used] for name in chosen if name in counts
    }
    title = "Failover times"
    return bar_figure(
        title,
        used,
        series,
        "faults",
        empty=f"{title}: no judged run had a fault.",
        zero_is_empty=True,
    )


def _violations_plot(violations: pa.Table, chosen: Sequence[str]) -> Plot:
    rows = violations.to_pylist()
    kinds = sorted({str(r["kind"]) for r in rows})
    series: dict[str, list[float | None]] = {}
    for name in chosen:
        by_kind = {str(r["kind"]): _count(r["runs"]) for r in rows if _name(r) == name}
        if by_kind:
            series[name] = [float(by_kind.get(kind, 0)) for kind in kinds]
    title = "Runs by violation kind"
    return bar_figure(
        title,
        kinds,
        series,
        "runs",
        empty=f"{title}: no judged run showed a violation.",
        zero_is_empty=True,
    )


def _intro(campaign: pa.Table, nights: pa.Table) -> str:
    rows = campaign.to_pylist()
    runs = sum(_count(r["runs"]) for r in rows)
    held = sum(_count(r["held"]) for r in rows)
    interrupted = sum(_count(r["interrupted"]) for r in rows)
    unreadable = sum(_count(r["unreadable"]) for r in rows)
    replays = sum(_count(r["replays"]) for r in rows)
    night_names = {str(r["night"]) for r in nights.to_pylist()}
    return (
        f"{runs} judged runs ({held} held) in {len(rows)} groups over {len(night_names)} "
        f"nights; {interrupted} interrupted, {unreadable} unreadable and {replays} replays are "
        "counted apart. Per scenario × target × backend × mode: held % is held / judged runs "
        "(any verdict but held counts against it) with its 95 % Wilson score interval; "
        "failover percentiles are over every fault of the group's judged runs, a fault never "
        "followed by an acknowledged send counted as never. A night is the UTC day its "
        "campaign started (campaign.json), else the day in the run folder's name."
    )


def campaign_section(tables: Mapping[str, pa.Table]) -> Section:
    """The campaign view: the group table, violations, failover times, nights, and charts."""
    campaign, nights = tables["campaign"], tables["campaign_nights"]
    violations, histogram = tables["campaign_violations"], tables["campaign_failover_histogram"]
    chosen = _chosen(campaign)
    return Section(
        "Campaign view",
        _intro(campaign, nights),
        (
            *split_columns(
                campaign,
                KEY,
                (
                    "runs",
                    "held",
                    "held_pct",
                    "held_ci_low_pct",
                    "held_ci_high_pct",
                    "other_outcomes",
                    "violating_runs",
                    "interrupted",
                    "unreadable",
                    "replays",
                ),
                ("Held rate and outcomes by group", "Failover times by group"),
            ),
            ("Violations by kind", violations),
            ("Held rate by night", nights),
            ("Failover time histogram (faults per bucket)", histogram.drop(["bucket_order"])),
        ),
        (
            ("held rate by night", _nights_plot(nights, chosen)),
            ("runs by violation kind", _violations_plot(violations, chosen)),
            ("failover times", _failover_plot(histogram, chosen)),
        ),
    )
