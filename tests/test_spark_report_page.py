"""The report page for people, from hand-made collected tables (no Spark): headers in words,
numbers written for reading, a section with nothing to show said in one sentence, the
summary first, and how "new" is decided said on the page."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lab.ground.errors import UsageError
from spark_reports.campaign_facts import CampaignFacts
from spark_reports.columns import COLUMNS, header, shown
from spark_reports.failures_view import FAILING_COLUMNS
from spark_reports.html_page import Items, Section, Table, Text, render_page, visible
from spark_reports.page_data import PageData, PreviousReport, ReportFacts, read_previous
from spark_reports.report_page import SECTIONS, performance_section, report_html, trend_section
from spark_reports.summary_page import duration, summary_section

KEY = ("scenario", "target", "backend", "mode")
CELL = {"scenario": "master-crash", "target": "broker_ref", "backend": "process", "mode": "m"}


def _cells(runs: int = 9, held: int = 6, **more: Any) -> pa.Table:
    row = {
        **CELL,
        "runs": runs, "held": held, "held_pct": 100 * held / runs,
        "held_ci_low_pct": 35.4, "held_ci_high_pct": 87.9,
        "other_outcomes": [f"broken {runs - held}"] if runs > held else [],
        "violating_runs": runs - held, "interrupted": 0, "unreadable": 0, "replays": 0,
        "failovers": 0, "failovers_never": 0, "failover_p50_s": None, "failover_p90_s": None,
        "failover_max_s": None,
    }  # fmt: skip
    return pa.Table.from_pylist([row | more])


def _failing(*known: str | None) -> pa.Table:
    rows = [
        {
            **CELL, "run_id": f"master-crash/2026010{n}T000000Z-{n}", "outcome": "broken",
            "violations": ["lost"], "seed": n, "known": how, "failure": f"{n:012x}",
            "campaign": "night-a", "reproduce": f".venv/bin/lab replay /runs/{n}", "folder": "/r",
        }
        for n, how in enumerate(known, start=1)
    ]  # fmt: skip
    schema = pa.schema(
        [(c, pa.list_(pa.string()) if c == "violations" else pa.int64() if c == "seed"
          else pa.string()) for c in FAILING_COLUMNS]
    )  # fmt: skip
    return pa.Table.from_pylist(rows, schema)


def _kinds(runs: int) -> pa.Table:
    rows = [{"kind": "lost", "runs": runs, "cells": 1, "new_runs": 1, "replays": 0}] if runs else []
    names = ("kind", "runs", "cells", "new_runs", "replays")
    return pa.Table.from_pylist(rows) if rows else pa.table({n: [] for n in names})


def _data(
    *, cells: pa.Table | None = None, failing: pa.Table | None = None, **facts: Any
) -> PageData:
    failing = _failing() if failing is None else failing
    tables = {
        "campaign": _cells() if cells is None else cells,
        "failing_runs": failing,
        "failure_kinds": _kinds(failing.num_rows),
        "new_since_previous": pa.table({**{k: ["x"] for k in KEY}, "kind": ["y"], "runs": [1]}),
    }
    base = ReportFacts(("/runs",), "2026-01-06T07:00:00Z", 9, 0, "day", 1.5)
    return PageData(tables, ReportFacts(**{**base.__dict__, **facts}))


def _text(section: Section) -> str:
    """What the section says in words: its sentences and the captions of its tables."""
    said = []
    for part in section.parts:
        if isinstance(part, Items):
            said.extend(part.items)
        elif isinstance(part, Text):
            said.append(part.text)
        elif isinstance(part, Table):
            said.append(part.caption)
    return " ".join(said)


def test_headers_are_words_and_numbers_are_written_for_reading() -> None:
    assert header("held_ci_low_pct") == "Held, 95 % CI low (%)"
    assert header("unavailable_total_s") == "Unavailable, total (s)"
    assert header("SYNC,SYNC,ALL") == "SYNC,SYNC,ALL"  # a pivot's configuration is a name
    assert not [c.header for c in COLUMNS.values() if "_" in c.header]
    assert shown("held_pct", 66.666666) == ("66.7", "pct")
    assert shown("held_pct", 100.0) == ("100", "pct")
    assert shown("unavailable_total_s", 3.14159) == ("3.14", "seconds")
    assert shown("failover_max_s", 12.345) == ("12.3", "seconds")
    assert shown("ack_p99_ms", 1234.4) == ("1,234", "ms")
    assert shown("throughput_kib_s", 2764.7) == ("2,765", "rate")
    assert shown("runs", 12345) == ("12,345", "count")
    assert shown("seed", 7985063174142371181) == ("7985063174142371181", "text")
    assert shown("other_outcomes", ["broken 3", "unknown 1"]) == ("broken 3, unknown 1", "list")
    assert shown("No HA", 2764.71, "rate") == ("2,765", "rate")
    assert shown("held_pct", None)[0] == ""
    assert (duration(1800), duration(5400), duration(90), duration(45)) == (
        "30 min",
        "1 h 30 min",
        "1 min 30 s",
        "45 s",
    )


def test_a_table_with_nothing_to_show_is_its_sentence() -> None:
    table = pa.table(
        {"scenario": ["a", "b"], "runs": [None, 3], "other_outcomes": [[], []], "x": [None, None]}
    )
    kept = visible(table, ("scenario",))
    assert kept.column_names == ["scenario", "runs"] and kept.column("scenario").to_pylist() == [
        "b"
    ]
    empty = pa.table({"scenario": ["a"], "runs": [None]})
    page = render_page(
        "T", [], [Section("S", (Table("Cap", empty, "Nothing here.", ("scenario",)),))]
    )
    assert '<p class="empty">Nothing here.</p>' in page and "<table>" not in page
    page = render_page("T", [], [Section("S", (Table("Cap", table, "-", ("scenario",)),))])
    heads = re.findall(r"<th>(.*?)</th>", page)
    assert [html.unescape(h) for h in heads] == ["Scenario", "Runs"]


def test_the_summary_outside_a_campaign_says_what_cannot_be_told() -> None:
    said = _text(summary_section(_data(failing=_failing(None))))
    assert "9 judged runs in 1 cell (scenario × target × backend × mode): 6 held (67 %)." in said
    assert "These runs are not from a campaign" in said
    assert "1 run did not hold (1 broken)" in said
    assert "By the failure database" not in said  # no campaign, no database to ask
    assert "No previous report was given: `lab report … --previous DIR`" in said


def test_the_summary_of_a_campaign_names_what_ran_and_what_is_new() -> None:
    night = CampaignFacts(
        "night-a", "/c/night-a", started="2026-01-05T21:00:07Z", ended="2026-01-05T21:30:09Z",
        elapsed_s=1802.0, budget_s=1800.0, seed=42, jobs=2, shard="1/1", cells=3,
        replays=(("abc", "fixed", "fixed"),), without_folder=("#4 s · t · b · m: lab: boom",),
    )  # fmt: skip
    data = _data(failing=_failing("new", "recorded", "replay"), campaigns=(night,))
    section = summary_section(data)
    said = _text(section)
    assert (
        "Campaign night-a: budget 30 min, seed 42, 2 runs at a time, shard 1/1; started "
        "2026-01-05 21:00 UTC, ended 2026-01-05 21:30 UTC (30 min 2 s); 3 cells planned."
    ) in said
    assert "1 run of night-a ended without a run folder (see its logs/): #4" in said
    assert "2 runs did not hold (2 broken), and 1 replay of recorded failures failed again" in said
    assert "By the failure database: 1 failing run showed a failure it had not recorded" in said
    assert "1 recorded failure replayed first: 1 fixed." in said
    failing = next(p for p in section.parts if isinstance(p, Table) and p.caption == "Failing runs")
    assert failing.table.column("known").to_pylist() == ["new", "recorded before", "replay"]
    assert failing.table.column_names[0] == "violations"
    assert "reproduce" in failing.table.column_names


def test_nothing_broke_is_one_sentence_and_no_table() -> None:
    night = CampaignFacts("night-a", "/c/night-a")
    section = summary_section(_data(cells=_cells(runs=5, held=5), campaigns=(night,)))
    assert "Nothing broke: every one of the 5 judged runs held." in _text(section)
    assert "Nothing failed, so no failure is new." in _text(section)
    assert "By the failure database" not in _text(section)
    assert not [p for p in section.parts if isinstance(p, Table) and "ailing" in p.caption]


def test_what_is_new_against_the_previous_report() -> None:
    previous = PreviousReport("/reports/last-night", "2026-01-05T07:00:00Z", _failing("new"))
    said = _text(summary_section(_data(previous=previous)))
    assert (
        "Against the previous report (/reports/last-night, made 2026-01-05 07:00 UTC, 1 failing "
        "run): 1 violation kind in a cell it did not show."
    ) in said
    data = _data(previous=previous)
    tables = {**data.tables, "new_since_previous": data.tables["new_since_previous"].slice(0, 0)}
    data = PageData(tables, data.facts)
    assert "every violation kind in every cell showed there too; nothing is new." in _text(
        summary_section(data)
    )


def test_no_single_node_run_means_no_change_table_but_a_sentence() -> None:
    pivot = {"scenario": ["s"], "target": ["t"], "backend": ["b"], "clients": ["1/1"]}
    figures = {
        **pivot, "config": ["SYNC,SYNC,ALL"], "config_order": [2000], "producers": [1],
        "consumers": [1], "runs": [2], "throughput_msgs_s": [240.0], "throughput_kib_s": [240.0],
        "change_pct": [None],
        **{f"{m}_p{p}_ms": [1.0] for m in ("ack", "receive") for p in (50, 95, 99)},
        "ack_unmatched": [0],
    }  # fmt: skip
    tables = {
        "performance": pa.table(figures),
        "performance_kib_s": pa.table({**pivot, "SYNC,SYNC,ALL": [240.0]}),
        "performance_ack_p99_ms": pa.table({**pivot, "SYNC,SYNC,ALL": [1.0]}),
        "performance_change_pct": pa.table({**pivot, "No HA": [None], "SYNC,SYNC,ALL": [None]}),
    }
    section = performance_section(PageData(tables, _data().facts))
    captions = [p.caption for p in section.parts if isinstance(p, Table)]
    assert "Throughput vs No HA (%)" not in captions
    assert any(
        isinstance(p, Text) and p.text.startswith("Throughput against a single node: nothing")
        for p in section.parts
    )
    tables["performance_change_pct"] = pa.table({**pivot, "No HA": [0.0], "SYNC,SYNC,ALL": [-80.0]})
    section = performance_section(PageData(tables, _data().facts))
    change = next(p for p in section.parts if isinstance(p, Table) and "No HA" in p.caption)
    assert change.table.column_names == [*pivot, "SYNC,SYNC,ALL"]  # the baseline's 0 % left out


def test_one_night_has_no_trend_only_a_sentence() -> None:
    trend = pa.table({"period": ["2026-01-05", "2026-01-06"], "runs": [3, 4]})
    nights = pa.table({"night": ["2026-01-05"], "runs": [7]})
    section = trend_section(PageData({"trend": trend, "campaign_nights": nights}, _data().facts))
    (said,) = section.parts
    assert isinstance(said, Text) and said.text.startswith(
        "All runs are from one night (2026-01-05), though their folders span 2 UTC days"
    )


def test_the_summary_comes_first_and_a_campaign_names_the_page() -> None:
    assert SECTIONS[0] is summary_section
    night = CampaignFacts("night-a", "/c/night-a")
    made: list[str] = []

    def section(title: str) -> Any:
        def make(data: PageData) -> Section:
            made.append(title)
            return Section(title, (Text("x"),))

        return make

    page = report_html(_data(campaigns=(night,)), [section("Summary"), section("Later")])
    assert made == ["Summary", "Later"]
    assert "<title>Campaign night-a</title>" in page
    assert page.index('id="summary"') < page.index('id="later"')
    assert "Chaos lab report" in report_html(_data(campaigns=(night,), outside=3), [])


def test_a_previous_report_is_read_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"failing_runs\.parquet"):
        read_previous(tmp_path)
    pq.write_table(pa.table({"run_id": ["x"]}), tmp_path / "failing_runs.parquet")
    with pytest.raises(UsageError, match="not a failing runs table"):
        read_previous(tmp_path)
    pq.write_table(_failing("new"), tmp_path / "failing_runs.parquet")
    (tmp_path / "report.json").write_text('{"v": 1, "made": "2026-01-05T07:00:00Z"}')
    previous = read_previous(tmp_path)
    assert (previous.made, previous.failing.num_rows) == ("2026-01-05T07:00:00Z", 1)
