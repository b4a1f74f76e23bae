"""The report job: extract inputs, transform them into report frames, load them into files.

extract_inputs   run folders (+ the compacted store) → labelled runs, latency histograms
report_frames    pure: runs + latency histogram → reliability, performance, trend frames
run_report_job   the whole job into `--out`: CSV + Parquet per table (the campaign part's
                 too, `campaign_job`), report.html (`report_page`) and report.json
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_reports.campaign_job import (
    campaign_frames,
    collect_campaign,
    extract_campaign,
    previous_frame,
)
from spark_reports.compaction import compact
from spark_reports.extract import (
    runs_frame,
    sources_histogram,
    store_history,
    store_latency,
    store_rollup,
    store_runs,
)
from spark_reports.history_copies import columnar_sources
from spark_reports.labels import with_labels
from spark_reports.latency import latency_histogram, message_latencies
from spark_reports.manifest import Commits, commits, read_manifest, split_seen
from spark_reports.outputs import collect_table, write_table
from spark_reports.page_data import (
    REPORT_FACTS,
    PageData,
    PreviousReport,
    ReportFacts,
    report_facts_json,
)
from spark_reports.performance import change_vs_baseline, performance_pivot, performance_table
from spark_reports.reliability import broken_runs, reliability_table, unreadable_runs
from spark_reports.report_page import report_html
from spark_reports.run_folders import list_run_folders, read_run
from spark_reports.session import DEFAULT_MASTER, spark_session
from spark_reports.trend import TrendBy, regressions, trend_table, with_period

__all__ = [
    "Inputs",
    "ReportFrames",
    "ReportOptions",
    "ReportTables",
    "collect_frames",
    "extract_inputs",
    "report_frames",
    "run_report_job",
]

Say = Callable[[str], None]


@dataclass(frozen=True)
class ReportOptions:
    runs_dirs: tuple[Path, ...]
    out: Path
    master: str = DEFAULT_MASTER
    store: Path | None = None
    p99_factor: float = 1.5
    trend_by: TrendBy = "day"
    previous: PreviousReport | None = None


@dataclass(frozen=True)
class Inputs:
    """Labelled runs (store and folders) and their latency histograms, summed over runs alike
    under one of them (`latency.rolled_up`: the same for every report group): the folders'
    in the tasks, the store's whole batches as compacted (its other runs' per run)."""

    runs: DataFrame
    histogram: DataFrame
    from_store: int
    from_folders: int


def extract_inputs(
    spark: SparkSession, runs_dirs: Sequence[Path], store: Path | None, say: Say
) -> Inputs:
    """Every run in the store, plus every folder under `runs_dirs` the store does not hold.

    With a manifest (`manifest`), a folder the store holds as it is now is not read at all;
    the others are read from their folders (their histories from the Parquet copies), and
    a store row is superseded by its folder when the folder has changed since. Histograms
    of stored runs come from the store (computed from its history if it has none).
    """
    folders = list_run_folders(runs_dirs)
    entries = read_manifest(store) if store is not None else {}
    unseen = split_seen(folders, entries).unseen if entries else folders
    records = [read_run(folder) for folder in unseen]
    stored = store_runs(spark, store)
    counted = None
    if store is not None and entries:
        changed = [r.run_id for r in records if r.run_id in entries]
        if changed:
            stored = stored.where(~F.col("run_id").isin(changed))
        counted = commits(store, exclude=changed)
        stored_count = len(entries) - len(changed)
    elif store is None:
        stored_count = 0
    else:
        stored_ids = {row["run_id"] for row in stored.select("run_id").collect()}
        records = [r for r in records if r.run_id not in stored_ids]
        stored_count = len(stored_ids)
    say(
        f"extract: {len(folders)} run folders, {stored_count} runs from the store, "
        f"{len(records)} read from their folders ({sum(r.problem is not None for r in records)}"
        " unreadable)"
    )
    runs = stored.drop("batch").unionByName(runs_frame(spark, records))
    sources = columnar_sources([r.folder for r in records if r.problem is None], say)
    histogram = sources_histogram(spark, sources, rollup=records)
    if stored_count:
        compacted = _stored_histogram(spark, store, stored, counted)
        histogram = compacted.unionByName(histogram) if sources.folders else compacted
    return Inputs(with_labels(runs), histogram, stored_count, len(records))


def _stored_histogram(
    spark: SparkSession, store: Path | None, stored: DataFrame, counted: Commits | None
) -> DataFrame:
    """Histograms of the stored runs: rolled up for whole batches, per run for the others
    (and for a store without a manifest), from the store's history if it has none."""
    rollup = None if counted is None else store_rollup(spark, store, counted)
    rows = None if counted is None else counted.rows()
    if rollup is not None and counted is not None:
        if not counted.partial:
            return rollup
        rows = counted.partial_rows()
    compacted = store_latency(spark, store, stored, rows=rows)
    if compacted is None:
        history = store_history(spark, store, stored, rows=rows)
        compacted = latency_histogram(message_latencies(history))
    return compacted if rollup is None else rollup.unionByName(compacted)


@dataclass(frozen=True)
class ReportFrames:
    reliability: DataFrame
    broken: DataFrame
    unreadable: DataFrame
    performance: DataFrame
    trend: DataFrame
    regressions: DataFrame


def report_frames(
    runs: DataFrame, histogram: DataFrame, *, trend_by: TrendBy, p99_factor: float
) -> ReportFrames:
    """Every report table, lazily; `histogram` is per run (`latency.latency_histogram`)."""
    trend = trend_table(with_period(runs, trend_by), histogram)
    return ReportFrames(
        reliability=reliability_table(runs),
        broken=broken_runs(runs),
        unreadable=unreadable_runs(runs),
        performance=change_vs_baseline(performance_table(runs, histogram)),
        trend=trend,
        regressions=regressions(trend, p99_factor),
    )


@dataclass(frozen=True)
class ReportTables:
    """The report's tables, collected, by file name."""

    tables: dict[str, pa.Table]


_ORDER = {
    "reliability": ("scenario", "target", "backend", "nodes", "durability"),
    "broken_runs": ("run_id",),
    "unreadable_runs": ("run_id",),
    "performance": ("scenario", "target", "backend", "producers", "consumers", "config_order"),
    "trend": ("scenario", "target", "backend", "nodes", "durability", "producers", "period_start"),
    "regressions": ("scenario", "target", "backend", "nodes", "durability", "period"),
}


def collect_frames(frames: ReportFrames, say: Say) -> ReportTables:
    """Collect each frame (sorted) and the seeds'-layout pivots of the performance table."""
    named = {
        "reliability": frames.reliability,
        "broken_runs": frames.broken,
        "unreadable_runs": frames.unreadable,
        "performance": frames.performance,
        "trend": frames.trend,
        "regressions": frames.regressions,
    }
    tables: dict[str, pa.Table] = {}
    for name, frame in named.items():
        tables[name] = collect_table(frame.orderBy(*_ORDER[name]))
        say(f"transform: {name}, {tables[name].num_rows} rows")
    performance = tables["performance"]
    configs = _configs_in_order(performance)
    for name, value in (
        ("performance_change_pct", "change_pct"),
        ("performance_kib_s", "throughput_kib_s"),
        ("performance_ack_p99_ms", "ack_p99_ms"),
    ):
        pivot = performance_pivot(frames.performance, value, configs)
        tables[name] = collect_table(pivot)
    return ReportTables(tables)


def _configs_in_order(performance: pa.Table) -> list[str]:
    pairs = {
        (row["config_order"], row["config"])
        for row in performance.select(["config_order", "config"]).to_pylist()
    }
    return [config for _, config in sorted(pairs, key=lambda p: (p[0] or 0, p[1] or ""))]


def run_report_job(options: ReportOptions, say: Say, spark: SparkSession | None = None) -> Path:
    """The whole report into `options.out`; returns the HTML page's path."""
    if spark is None:
        say(f"spark: starting ({options.master})")
        spark = spark_session(options.master)
    if options.store is not None:
        compact(options.runs_dirs, options.store, spark=spark, say=say)
    inputs = extract_inputs(spark, options.runs_dirs, options.store, say)
    campaign = extract_campaign(spark, options.runs_dirs, say)
    runs = inputs.runs.cache()
    say("transform: latencies from histories")
    histogram = inputs.histogram.cache()
    frames = report_frames(
        runs, histogram, trend_by=options.trend_by, p99_factor=options.p99_factor
    )
    tables = collect_frames(frames, say).tables
    histogram.unpersist()
    runs.unpersist()
    previous = options.previous
    before = None if previous is None else previous_frame(spark, previous.failing)
    tables.update(collect_campaign(campaign_frames(campaign.runs, before, campaign.coverage), say))
    options.out.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        write_table(table, options.out, name)
    say(f"load: {len(tables)} tables as CSV and Parquet in {options.out}")
    facts = ReportFacts(
        runs_dirs=tuple(str(d) for d in options.runs_dirs),
        made=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        from_folders=inputs.from_folders,
        from_store=inputs.from_store,
        trend_by=options.trend_by,
        p99_factor=options.p99_factor,
        campaigns=campaign.campaigns,
        outside=campaign.outside,
        previous=previous,
    )
    page = options.out / "report.html"
    page.write_text(report_html(PageData(tables, facts)), encoding="utf-8")
    (options.out / REPORT_FACTS).write_text(
        json.dumps(report_facts_json(facts, tables), indent=2) + "\n", encoding="utf-8"
    )
    say(f"load: {page}")
    return page
