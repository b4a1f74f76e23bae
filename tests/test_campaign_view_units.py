"""The campaign view's pure parts: the Wilson interval, chart-or-words decisions, reading a run
folder's result generically and its campaign's word on it, the page's column splits (no
Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from spark_reports.campaign_facts import Campaigns
from spark_reports.campaign_runs import read_campaign_run
from spark_reports.charts import bar_figure, figure_kind, in_words, interval_figure, line_figure
from spark_reports.html_page import split_columns
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


def test_an_interval_chart_compares_two_rows_or_more() -> None:
    assert interval_figure("Held", [], "% held", empty="none") == "none"
    one = interval_figure("Held", [("a · b", 90.0, 60.5, 98.25)], "% held", empty="-")
    assert one == "Held: 90 % held (a · b; 60.5–98.25)."
    two = interval_figure("Held", [("a", 90.0, 60.0, 98.0), ("b", 50.0, 20.0, 80.0)], "%", empty="")
    assert isinstance(two, bytes) and two.startswith(b"\x89PNG")


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


def test_a_campaign_run_carries_the_failure_databases_word(tmp_path: Path) -> None:
    """campaign.json's record of a run folder says whether its failure was new, recorded
    before, or a replay (a campaign replays with `lab run --spec`: result.json cannot tell)."""
    base = {"scenario": "s", "target": "t", "backend": "b", "mode": "m", "seed": 7}
    root = tmp_path / "night"
    folders = {}
    for name, verdict in (("a", "broken"), ("b", "unknown"), ("c", "broken"), ("d", "held")):
        folders[name] = _run_folder(root, {**base, "verdict": verdict, "violations": []}, name)
    record = {"kind": "fresh", "failure": None, "new_failure": False}
    runs = [
        {**record, "folder": "runs/a/20260105T230000Z-7", "failure": "f1", "new_failure": True},
        {**record, "folder": "runs/b/20260105T230000Z-7", "failure": "f2"},
        {**record, "folder": "runs/c/20260105T230000Z-7", "failure": "f0", "kind": "replay"},
        {**record, "folder": "runs/d/20260105T230000Z-7"},
        {**record, "folder": None, "number": 9, "scenario": "s", "error": "lab: no node"},
    ]
    raw = {"v": 1, "request": {"budget_s": 600, "seed": 5}, "runs": runs, "replays": []}
    (root / "campaign.json").write_text(json.dumps(raw))
    campaigns = Campaigns()
    read = {name: read_campaign_run(folder, campaigns) for name, folder in folders.items()}
    assert {n: r.known for n, r in read.items()} == {
        "a": "new",
        "b": "recorded",
        "c": "replay",
        "d": None,
    }
    assert [n for n, r in read.items() if r.replay] == ["c"]
    assert (read["a"].failure, read["a"].seed, read["a"].campaign) == ("f1", 7, "night")
    (facts,) = campaigns.seen()
    assert (facts.budget_s, facts.seed, facts.new_failures) == (600.0, 5, 1)
    assert facts.without_folder == ("#9 s · ? · ? · ?: lab: no node",)


# --- the page ---------------------------------------------------------------------------


def test_split_columns_keeps_keys_in_both_parts_and_every_column_once() -> None:
    table = pa.table({"k": ["a"], "x": [1], "y": [2], "z": [3], "w": [4]})
    one, two = split_columns(table, ("k",), ("y", "missing"), ("first", "rest"), "none")
    assert (one.caption, one.table.column_names, one.keys) == ("first", ["k", "y"], ("k",))
    assert (two.caption, two.table.column_names) == ("rest", ["k", "x", "z", "w"])
    assert one.empty == two.empty == "none"
