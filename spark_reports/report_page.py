"""The report page: its sections in order (`SECTIONS`), and the sections on reliability by
durability, performance, trend and the runs that could not be read.

A section is a function of `page_data.PageData` returning a `html_page.Section`; to add one,
write the function (its tables come from the job's frames) and put it in `SECTIONS`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from spark_reports.campaign_page import failover_section, held_rate_section
from spark_reports.charts import bar_chart, figure_kind, line_chart
from spark_reports.coverage_page import coverage_section
from spark_reports.html_page import Chart, Part, Section, Table, Text, render_page, split_columns
from spark_reports.page_data import PageData, SectionMaker
from spark_reports.reliability import GROUP
from spark_reports.summary_page import summary_section, utc_minute

__all__ = ["SECTIONS", "report_html"]

_MAX_TREND_SERIES = 8
_PIVOT_KEYS = ("scenario", "target", "backend", "clients")


def _groups(
    rows: Sequence[dict[str, object]], keys: Sequence[str]
) -> dict[tuple[object, ...], list[dict[str, object]]]:
    grouped: dict[tuple[object, ...], list[dict[str, object]]] = {}
    for row in rows:
        grouped.setdefault(tuple(row[k] for k in keys), []).append(row)
    return grouped


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def reliability_section(data: PageData) -> Section:
    reliability = data.tables["reliability"]
    tables = split_columns(
        reliability,
        GROUP,
        (
            "runs",
            "held",
            "broken",
            "unknown",
            "deviation",
            "unreadable",
            "acknowledged_lost",
            "duplicated",
            "resurrected",
            "unexpected",
            "two_masters_runs",
        ),
        ("Verdicts and messages", "Availability and failover"),
        "No run was read.",
    )
    intro = (
        "Per scenario × target × backend × nodes × durability. Available % is 1 − Σ "
        "unavailable / Σ workload seconds; failover percentiles are over every fault."
    )
    return Section("Reliability by durability", (Text(intro), *tables))


def _series(
    rows: Sequence[dict[str, object]], value: str, *, skip_baseline: bool = False
) -> tuple[list[str], dict[str, list[float | None]]]:
    """Client-count labels and one series of `value` per config (the seeds' column order)."""
    clients = sorted({(int(str(r["producers"])), int(str(r["consumers"]))) for r in rows})
    labels = [f"{p}/{c}" for p, c in clients]
    configs = sorted({(_num(r["config_order"]) or 0.0, str(r["config"])) for r in rows})
    cell = {(str(r["config"]), str(r["clients"])): r for r in rows}
    series = {
        config: [_num(cell.get((config, label), {}).get(value)) for label in labels]
        for _, config in configs
        if not (skip_baseline and config == "No HA")
    }
    return labels, series


def _performance_charts(performance: pa.Table, baseline: bool) -> list[Part]:
    """Per scenario on a target and backend, the charts that draw more than one client
    count per configuration (a single point per line is the table's number again)."""
    charts: list[Part] = []
    groups = _groups(performance.to_pylist(), ("scenario", "target", "backend"))
    for (scenario, target, backend), rows in groups.items():
        where = f"{scenario} on {target} ({backend})"
        wanted = [
            ("throughput", "throughput_kib_s", f"Throughput, {where}", "KiB/s", False),
            ("send-ack p99", "ack_p99_ms", f"Send→ack 99th percentile, {where}", "ms", True),
        ]
        for alt, value, title, unit, log_y in wanted:
            labels, series = _series(rows, value)
            if figure_kind(series, lines=True) == "chart":
                charts.append(
                    Chart(f"{alt} {where}", line_chart(title, labels, series, unit, log_y=log_y))
                )
        labels, change = _series(rows, "change_pct", skip_baseline=True)
        if baseline and figure_kind(change) == "chart":
            title = f"Throughput vs No HA, {where}"
            charts.append(Chart(f"change vs No HA {where}", bar_chart(title, labels, change, "%")))
    return charts


def performance_section(data: PageData) -> Section:
    tables, performance = data.tables, data.tables["performance"]
    change = tables["performance_change_pct"]
    change = change.drop(["No HA"]) if "No HA" in change.column_names else change
    baseline = any(
        change.column(n).null_count < change.num_rows
        for n in change.column_names
        if n not in _PIVOT_KEYS
    )
    compared: Part = (
        Table("Throughput vs No HA (%)", change, "None.", _PIVOT_KEYS, "pct")
        if baseline
        else Text(
            "Throughput against a single node: nothing to compare. That needs a single-node "
            "(No HA) run of the same scenario with the same producers/consumers as a replicated "
            "one, and these runs have none.",
            heading="Throughput vs No HA (%)",
        )
    )
    latency = (
        "runs",
        "ack_p50_ms",
        "ack_p95_ms",
        "ack_p99_ms",
        "receive_p50_ms",
        "receive_p95_ms",
        "receive_p99_ms",
        "ack_unmatched",
    )
    keys = ("scenario", "target", "backend", "config", "clients")
    return Section(
        "Performance",
        (
            Text(
                "Throughput (acknowledged messages per second, the mean over runs) and latency "
                "per configuration and producers/consumers, laid out like the seeds' table: a "
                "row per client count, a column per configuration."
            ),
            Table(
                "Throughput (KiB/s)",
                tables["performance_kib_s"],
                "No run measured it.",
                _PIVOT_KEYS,
                "rate",
            ),
            compared,
            Table(
                "Send→ack, 99th percentile (ms)",
                tables["performance_ack_p99_ms"],
                "No acknowledged send.",
                _PIVOT_KEYS,
                "ms",
            ),
            Table(
                "Latency percentiles",
                performance.select([*keys, *latency]),
                "No run measured it.",
                keys,
            ),
            *_performance_charts(performance, baseline),
        ),
    )


def _trend_charts(trend: pa.Table) -> list[Part]:
    charts: list[Part] = []
    rows = [r for r in trend.to_pylist() if r["runs"]]
    for (scenario,), scenario_rows in _groups(rows, ("scenario",)).items():
        periods = sorted({(r["period_start"], r["period"]) for r in scenario_rows})
        labels = [str(p[1]) for p in periods]
        keyed = _groups(scenario_rows, ("nodes", "durability", "producers", "consumers"))
        chosen = sorted(keyed.items(), key=lambda item: -len(item[1]))[:_MAX_TREND_SERIES]
        for value, words, unit in (
            ("ack_p99_ms", "Send→ack 99th percentile", "ms"),
            ("failover_p99_s", "Failover 99th percentile", "s"),
        ):
            series: dict[str, list[float | None]] = {}
            for (nodes, durability, producers, consumers), key_rows in chosen:
                by_period = {r["period"]: _num(r[value]) for r in key_rows}
                if any(v is not None for v in by_period.values()):
                    name = f"{nodes}n {durability} {producers}/{consumers}"
                    series[name] = [by_period.get(p[1]) for p in periods]
            if figure_kind(series, lines=True) == "chart":
                title = f"{words} by period, {scenario}"
                charts.append(
                    Chart(f"{value} trend {scenario}", line_chart(title, labels, series, unit))
                )
    return charts


def trend_section(data: PageData) -> Section:
    trend, facts = data.tables["trend"], data.facts
    by = "UTC day" if facts.trend_by == "day" else "lab git revision"
    periods = sorted({str(r["period"]) for r in trend.to_pylist() if r["runs"]})
    nights = {str(r["night"]) for r in data.tables["campaign_nights"].to_pylist() if r["runs"]}
    if len(periods) < 2:
        which = f" ({periods[0]})" if periods else ""
        said = f"All runs fall in one {by}{which}: there is no trend to show yet."
        return Section("Trend", (Text(said),))
    if facts.trend_by == "day" and len(nights) < 2:
        said = (
            f"All runs are from one night ({', '.join(sorted(nights)) or 'undated'}), though "
            f"their folders span {len(periods)} UTC days: there is no trend to show yet."
        )
        return Section("Trend", (Text(said),))
    keys = (
        "scenario",
        "target",
        "backend",
        "nodes",
        "durability",
        "producers",
        "consumers",
        "period",
    )
    factor = f"{facts.p99_factor:g}×"
    return Section(
        "Trend",
        (
            Text(
                f"The figures per {by}, and the regressions between consecutive periods of a "
                f"configuration: a verdict that went from held to broken, a 99th percentile "
                f"that grew by more than {factor}."
            ),
            Table(
                "Regressions",
                data.tables["regressions"],
                "No regression: no verdict went from held to broken and no 99th percentile "
                f"grew by more than {factor}.",
                (),
            ),
            *split_columns(
                trend.drop(["period_start"]),
                keys,
                ("runs", "held", "broken", "unknown", "unreadable", "verdict"),
                ("By period: verdicts", "By period: figures"),
                "No run.",
            ),
            *_trend_charts(trend),
        ),
    )


def unreadable_section(data: PageData) -> Section:
    unreadable = data.tables["unreadable_runs"]
    intro = (
        f"{unreadable.num_rows:,} run folders are left out of every figure above (they never "
        "count as held)."
        if unreadable.num_rows
        else "Every run folder could be read."
    )
    parts: tuple[Part, ...] = (Text(intro),)
    if unreadable.num_rows:
        parts += (Table("", unreadable, "None.", ("run_id",)),)
    return Section("Runs that could not be read", parts)


SECTIONS: tuple[SectionMaker, ...] = (
    summary_section,
    held_rate_section,
    failover_section,
    coverage_section,
    reliability_section,
    performance_section,
    trend_section,
    unreadable_section,
)
"""The page's sections, in order: the summary first."""


def report_html(data: PageData, sections: Sequence[SectionMaker] = SECTIONS) -> str:
    """The page: a campaign's name as its title when every run is from one campaign."""
    facts = data.facts
    campaigns = facts.campaigns
    alone = len(campaigns) == 1 and not facts.outside
    title = f"Campaign {campaigns[0].name}" if alone else "Chaos lab report"
    folders = facts.from_folders + facts.from_store
    store = f", {facts.from_store:,} of them from the store" if facts.from_store else ""
    lead = [
        f"Made {utc_minute(facts.made)} from {folders:,} run folders in "
        f"{', '.join(facts.runs_dirs)}{store}."
    ]
    return render_page(title, lead, [make(data) for make in sections])
