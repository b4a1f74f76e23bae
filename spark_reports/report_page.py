"""The report page's sections and charts, from the collected tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from spark_reports.charts import Plot, bar_figure, line_figure
from spark_reports.html_page import Section, render_page, split_columns

__all__ = ["report_html"]

_MAX_TREND_SERIES = 8


def _groups(
    table: pa.Table, keys: Sequence[str]
) -> dict[tuple[object, ...], list[dict[str, object]]]:
    grouped: dict[tuple[object, ...], list[dict[str, object]]] = {}
    for row in table.to_pylist():
        grouped.setdefault(tuple(row[k] for k in keys), []).append(row)
    return grouped


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


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


def _performance_charts(performance: pa.Table) -> list[tuple[str, Plot]]:
    charts = []
    groups = _groups(performance, ("scenario", "target", "backend"))
    for (scenario, target, backend), rows in groups.items():
        where = f"{scenario} on {target} ({backend})"
        labels, kib = _series(rows, "throughput_kib_s")
        title = f"Throughput, {where}"
        empty = f"{title}: no run measured it."
        charts.append(
            (f"throughput {where}", line_figure(title, labels, kib, "KiB/s", empty=empty))
        )
        labels, change = _series(rows, "change_pct", skip_baseline=True)
        title = f"Throughput vs No HA, {where}"
        empty = f"{title}: no single-node (No HA) run at the same client count to compare with."
        charts.append(
            (f"change vs No HA {where}", bar_figure(title, labels, change, "%", empty=empty))
        )
        labels, ack = _series(rows, "ack_p99_ms")
        title = f"send→ack p99, {where}"
        empty = f"{title}: no acknowledged send."
        ack_plot = line_figure(title, labels, ack, "ms", empty=empty, log_y=True)
        charts.append((f"send-ack p99 {where}", ack_plot))
    return charts


def _reliability_chart(reliability: pa.Table) -> list[tuple[str, Plot]]:
    rows = [r for r in reliability.to_pylist() if r["runs"]]
    if not rows:
        return []
    labels = [f"{r['scenario']}\n{r['nodes']}n {r['durability']}" for r in rows]
    short = [label if len(label) < 48 else label[:45] + "…" for label in labels]
    availability = {"availability %": [_num(r["availability_pct"]) for r in rows]}
    broken = {"broken runs": [_num(r["broken"]) for r in rows]}
    return [
        (
            "availability",
            bar_figure(
                "Availability by group",
                short,
                availability,
                "%",
                empty="Availability by group: no run had a workload to measure it over.",
            ),
        ),
        (
            "broken runs",
            bar_figure(
                "Broken runs by group",
                short,
                broken,
                "runs",
                empty=f"Broken runs by group: none of the {len(rows)} groups has a broken run.",
                zero_is_empty=True,
            ),
        ),
    ]


def _trend_charts(trend: pa.Table) -> list[tuple[str, Plot]]:
    charts = []
    rows = [r for r in trend.to_pylist() if r["runs"]]
    for scenario, scenario_rows in _groups(pa.Table.from_pylist(rows), ("scenario",)).items():
        periods = sorted({(r["period_start"], r["period"]) for r in scenario_rows})
        labels = [str(p[1]) for p in periods]
        keyed = _groups(
            pa.Table.from_pylist(scenario_rows),
            ("nodes", "durability", "producers", "consumers"),
        )
        chosen = sorted(keyed.items(), key=lambda item: -len(item[1]))[:_MAX_TREND_SERIES]
        for value, unit in (("ack_p99_ms", "ms"), ("failover_p99_s", "s")):
            series: dict[str, list[float | None]] = {}
            for (nodes, durability, producers, consumers), key_rows in chosen:
                by_period = {r["period"]: _num(r[value]) for r in key_rows}
                if any(v is not None for v in by_period.values()):
                    name = f"{nodes}n {durability} {producers}/{consumers}"
                    series[name] = [by_period.get(p[1]) for p in periods]
            if series:
                title = f"{value} by period, {scenario[0]}"
                plot = line_figure(title, labels, series, unit, empty=f"{title}: no value.")
                charts.append((f"{value} trend {scenario[0]}", plot))
    return charts


def report_html(tables: Mapping[str, pa.Table], summary: Sequence[str]) -> str:
    """The page: summary, reliability, broken runs, performance, trend, unreadable runs."""
    reliability, unreadable = tables["reliability"], tables["unreadable_runs"]
    broken, regressions = tables["broken_runs"], tables["regressions"]
    runs = sum(int(v or 0) for v in reliability.column("runs").to_pylist())
    lines = [
        f"{runs} runs read, {broken.num_rows} broken, {unreadable.num_rows} could not be read",
        f"{regressions.num_rows} regressions flagged",
        *summary,
    ]
    sections = [
        Section(
            "Reliability",
            "Per scenario × target × backend × nodes × durability. Availability is "
            "1 − Σ unavailable / Σ workload seconds; failover percentiles are over every "
            "fault of the group's runs.",
            split_columns(
                reliability,
                ("scenario", "target", "backend", "nodes", "durability"),
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
            ),
            tuple(_reliability_chart(reliability)),
        ),
        Section(
            "Broken runs",
            "Every run whose verdict is broken, with its folder and the command that "
            "reproduces it.",
            (("", broken),),
        ),
        Section(
            "Performance",
            "Throughput (mean of acknowledged messages per second over runs) and latency "
            "percentiles per configuration and producers/consumers, laid out like the seeds' "
            "table: each cell of the first table is the change against the single node "
            "(No HA) at the same client count.",
            (
                ("Throughput change vs No HA (%)", tables["performance_change_pct"]),
                ("Throughput (KiB/s)", tables["performance_kib_s"]),
                ("send→ack p99 (ms)", tables["performance_ack_p99_ms"]),
                *split_columns(
                    tables["performance"],
                    ("scenario", "target", "backend", "config", "clients"),
                    ("runs", "throughput_msgs_s", "throughput_kib_s", "change_pct"),
                    ("All figures: throughput", "All figures: latency"),
                ),
            ),
            tuple(_performance_charts(tables["performance"])),
        ),
        Section(
            "Trend",
            "The same figures per period, and the regressions between consecutive periods "
            "of a configuration.",
            (
                ("Regressions", regressions),
                *split_columns(
                    tables["trend"],
                    (
                        "scenario",
                        "target",
                        "backend",
                        "nodes",
                        "durability",
                        "producers",
                        "consumers",
                        "period",
                    ),
                    ("runs", "held", "broken", "unknown", "unreadable", "verdict"),
                    ("By period: verdicts", "By period: figures"),
                ),
            ),
            tuple(_trend_charts(tables["trend"])),
        ),
        Section(
            "Runs that could not be read",
            f"{unreadable.num_rows} run folders are left out of every figure above "
            "(they never count as held).",
            (("", unreadable),),
        ),
    ]
    return render_page("Chaos lab report", lines, sections)
