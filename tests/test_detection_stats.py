"""The detection benchmark's statistics and targets on hand-written trials (no campaign):
Kaplan–Meier censored at the budget, the paired per-bug medians, Mann–Whitney U and A12,
throughput and idle time, and each target met, missed or not measured."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from detection_helpers import cell_trials, trial

from lab.bench.detection_pace import pace_line, paces
from lab.bench.detection_results import NamedResult
from lab.bench.detection_stats import bug_median, compare, paired_ratio, survival, times_of
from lab.bench.detection_targets import targets
from lab.bench.zoo import Bug, Replacement


def test_survival_is_kaplan_meier_with_misses_censored_at_the_budget() -> None:
    cells = [
        *cell_trials("a", "g", [1.0, 2.0, None]),
        *cell_trials("b", "g", [2.0, 5.0, None]),
        trial(None, "g", 1, 0.5),  # the control is no bug to find
        trial("c", "g", 1, None, error="lab: error: x"),  # failed to run: no trial
    ]
    curve = survival(cells, "g", 600)
    assert (curve.trials, curve.found, curve.median) == (6, 4, 2.0)
    assert curve.at(0.5) == 1.0
    assert curve.at(1.0) == pytest.approx(5 / 6)
    assert curve.at(3.0) == pytest.approx(0.5)  # 5/6 × (1 − 2/5)
    assert curve.at(10.0) == pytest.approx(1 / 3)  # 1/2 × (1 − 1/3); the misses stay
    nothing = survival(cell_trials("a", "h", [None, None]), "h", 120)
    assert (nothing.found, nothing.median, nothing.at(2.0)) == (0, None, 1.0)


def test_a_bugs_median_is_a_finding_only_when_most_trials_found_it() -> None:
    assert bug_median(cell_trials("a", "g", [4.0, 6.0, None])) == 6.0
    assert bug_median(cell_trials("a", "g", [None, 8.0, None])) is None
    assert bug_median(cell_trials("a", "g", [3.0, None])) == 3.0  # the low median of two
    assert bug_median([]) is None
    assert times_of(cell_trials("a", "g", [4.0, None]), 10.0) == [4.0, 10.0]


PAIRED = [
    *cell_trials("a", "random", [4.0, 6.0, None]),
    *cell_trials("a", "coverage", [1.0, 2.0, 3.0]),
    *cell_trials("b", "random", [None, None, 8.0]),
    *cell_trials("b", "coverage", [2.0, None, None]),
    *cell_trials("c", "random", [2.0, 2.0, 2.0]),
    *cell_trials("c", "coverage", [4.0, 4.0, 4.0]),
    *cell_trials("d", "random", [None, None]),  # coverage never ran it: not paired
]


def test_the_paired_ratio_is_the_median_over_the_bugs_both_found() -> None:
    # a: 6.0 / 2.0 = 3.0; b: neither found it in most trials; c: 2.0 / 4.0 = 0.5
    assert paired_ratio(PAIRED, "random", "coverage") == (1.75, 2)
    assert paired_ratio(PAIRED, "coverage", "random") == (1.17, 2)
    assert paired_ratio(cell_trials("a", "random", [None]), "random", "coverage") == (None, 0)


def test_mann_whitney_and_a12_compare_the_trials_bug_by_bug_and_pooled() -> None:
    comp = compare(PAIRED, "random", "coverage", 600)
    rows = {b.bug: b for b in comp.bugs}
    assert sorted(rows) == ["a", "b", "c"]
    assert (rows["a"].ratio, rows["a"].a12) == (3.0, 1.0)  # every coverage trial sooner
    assert rows["a"].p_value == pytest.approx(0.1)  # the least two-sided p of 3 against 3
    assert rows["b"].a12 == pytest.approx(5 / 9)  # [10, 10, 8] against [2, 10, 10]
    assert (rows["c"].ratio, rows["c"].a12) == (0.5, 0.0)
    assert (comp.median_ratio, comp.both_found) == (1.75, 2)
    assert comp.p_value is not None and 0 < comp.p_value < 1 and comp.a12 is not None
    same = compare(
        cell_trials("e", "random", [None]) + cell_trials("e", "x", [None]), "random", "x", 60
    )
    assert (same.bugs[0].p_value, same.bugs[0].a12) == (1.0, 0.5)  # nothing to tell apart


def test_throughput_counts_runs_faults_and_where_the_idle_time_went() -> None:
    busy = dict(campaign_s=300.0, run_s=270.0, faults=20, first_run_s=4.0, gaps_s=6.0)
    cells = [
        trial("a", "random", 1, None, **busy),  # 9 runs, 8 gaps; ended 20 s before the budget
        trial("a", "random", 2, 2.0, **{**busy, "campaign_s": 180.0, "run_s": 160.0}),
        trial("a", "random", 3, None, error="lab: error: x", campaign_s=3.0),
        trial("a", "coverage", 1, None),  # no campaign time recorded: not counted
    ]
    random, coverage = paces(cells, ("random", "coverage"), 320.0)
    assert (random.campaigns, random.runs, random.faults) == (2, 13, 40)
    assert random.runs_per_min == pytest.approx(13 / 8)  # 480 s of campaigns
    assert random.faults_per_min == pytest.approx(5.0)
    assert random.busy == pytest.approx(430 / 480)
    assert (random.start_s, random.unused_s) == (4.0, 20.0)
    assert random.gap_s == pytest.approx(12 / 11)  # 6 s over 8 gaps, 6 s over 3
    assert random.end_s == pytest.approx((20.0 + 10.0) / 2)
    assert coverage.campaigns == 0
    assert pace_line([random, coverage]) == (
        "throughput: random 1.62 runs/min, 5.0 faults per min (runs 90% of campaign time; idle: "
        "start 4.0 s, between runs 1.1 s, end 15.0 s, budget unused 20.0 s); "
        "coverage no campaign ran"
    )


def _bug(name: str, after: bool = False) -> Bug:
    return Bug(
        name=name,
        design="replicated-group",
        breaks="x",
        claim="x",
        document="x",
        expect=("lost",),
        cheap=False,
        replacements=(Replacement("broker_ref/x.py", "a", "b"),),
        source=Path(f"zoo/{name}.toml"),
        after_generator=after,
    )


ZOO = [_bug("a"), _bug("b"), _bug("c", after=True)]


def _round(coverage: dict[str, list[float | None]], random: dict[str, list[float | None]]) -> list:
    cells = []
    for generator, by_bug in (("coverage", coverage), ("random", random)):
        for bug, minutes in by_bug.items():
            after = bug == "c"
            cells += cell_trials(bug, generator, minutes, canary=True, after_generator=after)
    return cells


def test_a_round_that_meets_every_target_says_so() -> None:
    cells = _round(
        {"a": [1.0, 2.0, 2.5], "b": [0.5, None, 2.0], "c": [1.0, 3.0, 1.5]},
        {"a": [4.0, 6.0, None], "b": [None, 5.0, None], "c": [3.0, 6.0, None]},
    )
    named = [NamedResult(b.name, "master-failure", "J1", "held") for b in ZOO]
    found = targets(cells, named, ZOO, 600)
    assert [t.status for t in found] == ["met"] * 7, found
    assert found[0].figure == "3/3 bugs"
    assert found[0].note == "measured on a zoo of 3 bugs, not at least 21"  # still evaluated
    assert found[1].figure == "2.0 min (Kaplan–Meier over 9 trials)"
    assert found[3].figure == "3.5× over 2 bugs both found"  # a 6/2, c 6/1.5; b random 1/3
    assert found[5].figure == "after 1/1, before 2/2 (as often: 1.0)"


def test_each_target_missed_says_its_figure_and_under_which_conditions() -> None:
    cells = _round(
        {"a": [1.0, None, None], "b": [None, None, None], "c": [None, None]},
        {"a": [2.0, 2.0, 2.0], "b": [1.0, None, None], "c": [None, None]},
    )
    cells = [replace(c, canary=c.bug != "b") for c in cells]
    found = targets(cells, [], ZOO, 120)
    statuses = [t.status for t in found]
    assert statuses == ["missed"] * 5 + ["met", "missed"], found  # after: 0/1 is within one
    assert found[0].figure == "0/3 bugs (short: a 1/3, b 0/3, c 0/2)"
    assert found[0].note == (
        "measured on campaigns of 2 min, not 10, 2 trial(s) of a bug, not 3, "
        "a zoo of 3 bugs, not at least 21"
    )
    assert found[1].figure.startswith("over 2 min (fewer than half of 8 trials found)")
    assert found[2].figure == "2/3 bugs have a canary (none: b)"
    assert found[3].figure == "no bug found by both in most of its trials"
    assert found[4].figure == "coverage 1/3, random 2/3 (only random found: b)"
    assert found[5].figure == "after 0/1, before 1/2 (as often: 0.5)"
    assert found[6].figure == "0/3 bugs against the named scenarios (not: a, b, c)"


def test_a_target_with_nothing_to_measure_says_not_measured() -> None:
    only_random = [c for c in _round({}, {"a": [1.0]})]
    found = targets(only_random, [], ZOO, 600)
    assert [t.status for t in found] == [
        "not measured",
        "not measured",
        "met",
        "not measured",
        "not measured",
        "not measured",
        "missed",
    ]
