"""The campaign view's pure parts: the Wilson interval, chart-or-words decisions, reading a run
folder's result generically, the page's column splits and section insertion (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from spark_reports.campaign_runs import Campaigns, read_campaign_run
from spark_reports.charts import bar_figure, figure_kind, in_words, line_figure
from spark_reports.html_page import Section, insert_sections, render_page, split_columns
from spark_reports.report_page import _reliability_chart
from spark_reports.wilson import Z_95, wilson_interval

# --- Wilson score interval --------------------------------------------------------------


@pytest.mark.parametrize(
    ("held", "runs", "low", "high"),
    [  # published values of the 95 % Wilson interval
        (0, 10, 0.0, 0.2775),
        (5, 10, 0.2366, 0.7634),
        (10, 10, 0.7225, 1.0),
        (20, 20, 0.8389, 1.0),
        (81, 263, 0.2553, 0.3662),
    ],
)
def test_wilson_interval_matches_published_values(
    held: int, runs: int, low: float, high: float
) -> None:
    interval = wilson_interval(held, runs)
    assert interval is not None
    assert interval[0] == pytest.approx(low, abs=5e-5)
    assert interval[1] == pytest.approx(high, abs=5e-5)


def test_wilson_interval_is_the_score_tests_boundary() -> None:
    """Each bound p solves (p̂ − p)² = z² p (1 − p) / n, and the interval narrows with n."""
    for held, runs in ((3, 7), (1, 2), (99, 100), (400, 1000)):
        interval = wilson_interval(held, runs)
        assert interval is not None
        p_hat = held / runs
        for p in interval:
            if 0.0 < p < 1.0:
                assert (p_hat - p) ** 2 == pytest.approx(Z_95**2 * p * (1 - p) / runs)
        assert interval[0] <= p_hat <= interval[1]
    wide, narrow = wilson_interval(7, 10), wilson_interval(700, 1000)
    assert wide is not None and narrow is not None
    assert narrow[1] - narrow[0] < wide[1] - wide[0]


def test_wilson_interval_without_runs_or_with_impossible_counts() -> None:
    assert wilson_interval(0, 0) is None
    for held, runs in ((3, 2), (-1, 4), (0, -1)):
        with pytest.raises(ValueError, match="trials"):
            wilson_interval(held, runs)


# --- charts: empty, one value, or a chart -----------------------------------------------


def test_figure_kind_decisions() -> None:
    assert figure_kind({}) == "empty"
    assert figure_kind({"a": [None, None]}) == "empty"
    assert figure_kind({"broken": [0.0, 0.0, 0.0]}, zero_is_empty=True) == "empty"
    assert figure_kind({"broken": [0.0, 0.0]}) == "chart"  # zeros are values otherwise
    assert figure_kind({"a": [4.0]}) == "number"
    assert figure_kind({"a": [None, 4.0, None]}) == "number"
    assert figure_kind({"a": [0.0, 2.0]}, zero_is_empty=True) == "chart"
    assert figure_kind({"a": [1.0], "b": [2.0]}) == "chart"  # two bars
    assert figure_kind({"a": [1.0], "b": [2.0]}, lines=True) == "number"  # both at one x
    assert figure_kind({"a": [1.0, None], "b": [None, 2.0]}, lines=True) == "chart"


def test_figures_return_words_or_png() -> None:
    zeros = {"runs": [0.0, 0.0]}
    empty = bar_figure("Broken", ["g1", "g2"], zeros, "runs", empty="none", zero_is_empty=True)
    assert empty == "none"
    one = bar_figure("Availability", ["g1"], {"availability %": [99.5]}, "%", empty="-")
    assert one == "Availability: 99.5 % (g1, availability %)."
    line = line_figure("p99", ["2026-01-05"], {"x": [1.25], "y": [None]}, "s", empty="-")
    assert line == "p99: 1.25 s (2026-01-05, x)."
    chart = bar_figure("Two", ["g1", "g2"], {"runs": [1.0, 3.0]}, "runs", empty="-")
    assert isinstance(chart, bytes) and chart.startswith(b"\x89PNG")
    assert in_words("T", ["a\nb"], {"": [2.0]}, "ms") == "T: 2 ms (a b)."


def test_broken_runs_chart_without_a_broken_run_is_a_sentence() -> None:
    rows = [
        {"scenario": f"s{i}", "nodes": 2, "durability": "SYNC,SYNC,ALL", "runs": 3}
        | {"availability_pct": 100.0 - i, "broken": 0}
        for i in range(3)
    ]
    charts = dict(_reliability_chart(pa.Table.from_pylist(rows)))
    assert charts["broken runs"] == "Broken runs by group: none of the 3 groups has a broken run."
    assert isinstance(charts["availability"], bytes)
    one = dict(_reliability_chart(pa.Table.from_pylist([rows[0] | {"broken": 2}])))
    assert one["broken runs"] == "Broken runs by group: 2 runs (s0 2n SYNC,SYNC,ALL, broken runs)."


# --- reading a run's result generically -------------------------------------------------


def _run_folder(root: Path, result: dict[str, object] | None, name: str = "s") -> Path:
    folder = root / "runs" / name / "20260105T230000Z-7"
    folder.mkdir(parents=True)
    spec = {"scenario": name, "target": "t", "backend": "b", "group": {"mode": "active-passive"}}
    (folder / "spec.json").write_text(json.dumps(spec))
    if result is not None:
        (folder / "result.json").write_text(json.dumps(result))
    return folder


def test_any_verdict_is_an_outcome_and_interrupted_is_counted_apart(tmp_path: Path) -> None:
    base = {"v": 2, "scenario": "s", "target": "t", "backend": "b", "mode": "replicated-group"}
    deviation = read_campaign_run(
        _run_folder(tmp_path / "a", {**base, "verdict": "deviation", "violations": ["x", "x"]})
    )
    assert deviation.outcome == "deviation" and deviation.problem is None
    assert deviation.violations == ("x",)
    assert deviation.mode == "replicated-group" and not deviation.interrupted
    stopped = read_campaign_run(
        _run_folder(tmp_path / "b", {**base, "verdict": "interrupted", "reasons": ["by SIGINT"]})
    )
    assert stopped.interrupted and stopped.outcome is None
    assert stopped.problem == "run was by SIGINT"
    failed = read_campaign_run(_run_folder(tmp_path / "c", {**base, "error": "E: boom\nmore"}))
    assert failed.problem == "run did not finish: E: boom" and not failed.interrupted
    killed = read_campaign_run(_run_folder(tmp_path / "d", None))
    assert killed.problem is not None and killed.problem.startswith("no result.json")
    assert (killed.target, killed.mode) == ("t", "active-passive")  # from spec.json
    old = read_campaign_run(
        _run_folder(tmp_path / "e", {"scenario": "s", "verdict": "broken", "replay": {"of": "x"}})
    )
    assert old.violations == ("(not recorded)",) and old.replay and old.mode == "active-passive"


def test_night_is_the_day_the_campaign_started(tmp_path: Path) -> None:
    folder = _run_folder(tmp_path / "night", {"verdict": "held", "violations": []})
    assert read_campaign_run(folder).night == "2026-01-05"
    (tmp_path / "night" / "campaign.json").write_text('{"v": 1, "started": "2026-01-04T22:10:00Z"}')
    run = read_campaign_run(folder, Campaigns())
    assert (run.campaign, run.night) == ("night", "2026-01-04")
    (tmp_path / "night" / "campaign.json").write_text("not json")
    run = read_campaign_run(folder, Campaigns())
    assert (run.campaign, run.night) == ("night", "2026-01-05")


# --- the page ---------------------------------------------------------------------------


def test_split_columns_keeps_keys_in_both_parts_and_every_column_once() -> None:
    table = pa.table({"k": ["a"], "x": [1], "y": [2], "z": [3], "w": [4]})
    (c1, one), (c2, two) = split_columns(table, ("k",), ("y", "missing"), ("first", "rest"))
    assert (c1, one.column_names) == ("first", ["k", "y"])
    assert (c2, two.column_names) == ("rest", ["k", "x", "z", "w"])


def test_sections_are_inserted_before_the_named_one() -> None:
    page = render_page("T", [], [Section("Alpha", ""), Section("Broken runs", "")])
    added = insert_sections(page, [Section("Campaign view", "x")], before="Broken runs")
    order = [added.index(f'<h2 id="{i}">') for i in ("alpha", "campaign-view", "broken-runs")]
    assert order == sorted(order)
    at_end = insert_sections(page, [Section("Late", "")], before="Nowhere")
    assert at_end.index('<h2 id="late">') > at_end.index('<h2 id="broken-runs">')
