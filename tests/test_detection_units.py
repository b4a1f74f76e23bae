"""The detection benchmark without running it: its flags (a generator this lab's campaign
cannot run refused before anything starts), a campaign's record read as a finding, the
table, the headline and the generated page, the named scenarios per design."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import pytest
from conftest import run_lab
from detection_helpers import cell_trials, trial

from lab.bench.detection import campaign_key, list_zoo, named_scenarios
from lab.bench.detection_request import (
    DetectionRequest,
    add_detection_options,
    detection_request,
)
from lab.bench.detection_results import (
    CellResult,
    NamedResult,
    ShrinkResult,
    cell_of_campaign,
    named_of_run,
    shrink_of,
)
from lab.bench.detection_table import headline, named_summary, table
from lab.bench.zoo import load_zoo
from lab.ground.errors import UsageError

BEGAN = dt.datetime(2026, 11, 26, 8, 0, 0, tzinfo=dt.UTC)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_detection_options(parser.add_argument_group("detection"))
    return parser.parse_args(list(argv))


def test_the_defaults_and_the_flags_make_the_request() -> None:
    assert detection_request(_args()) == DetectionRequest()
    asked = detection_request(
        _args(
            *("--bugs", "a,b", "--budget", "2m", "--trials", "2", "--jobs", "2", "--named"),
            *("--seed", "5", "--shrink-budget", "0", "--control"),
        )
    )
    assert (asked.bugs, asked.budget_s, asked.trials, asked.jobs) == (("a", "b"), 120.0, 2, 2)
    assert asked.named and asked.control and asked.shrink_budget_s == 0 and asked.seeds() == (5, 6)
    matrix = detection_request(_args("--named", "--trials", "0"))
    assert matrix.trials == 0 and matrix.seeds() == ()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--generators", "coverage"), "generator 'coverage' needs `lab campaign --guide"),
        (("--generators", "fuzz"), "unknown generator 'fuzz'"),
        (("--generators", "random,random"), "a generator is named twice"),
        (("--trials", "0"), "--trials 0: at least one (0 only with --named"),
        (("--jobs", "0"), "--jobs 0: at least one at a time"),
        (("--budget", "5"), "budget '5' is too short"),
        (("--seed", "-1"), "--seed -1: a seed is 0 or more"),
    ],
)
def test_a_bad_flag_is_refused_before_anything_starts(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace("`", ".")):
        detection_request(_args(*argv), campaign_help="usage: lab campaign [--budget BUDGET]")


def test_coverage_is_taken_once_lab_campaign_offers_its_guide() -> None:
    offered = "  --guide {random,coverage}  how the runs are drawn"
    asked = detection_request(_args("--generators", "random,coverage"), campaign_help=offered)
    assert asked.generators == ("random", "coverage")


def _record(number: int, verdict: str, started: str, seconds: float, **more: object) -> dict:
    return {
        "number": number,
        "kind": "fresh",
        "verdict": verdict,
        "started": started,
        "seconds": seconds,
        "violations": more.get("violations", []),
        "folder": more.get("folder"),
        "seed": more.get("seed", number * 11),
    }


def test_a_campaigns_first_broken_run_is_its_finding() -> None:
    campaign = {
        "runs": [
            _record(2, "unknown", "2026-11-26T08:00:31.000000Z", 29.0),
            _record(1, "held", "2026-11-26T08:00:01.500000Z", 29.0),
            _record(
                3,
                "broken",
                "2026-11-26T08:01:01.000000Z",
                29.0,
                violations=["lost"],
                folder="runs/random/x",
                seed=99,
            ),
            _record(4, "broken", "2026-11-26T08:01:31.000000Z", 29.0),
            {**_record(5, "broken", "2026-11-26T08:00:00.000000Z", 1.0), "kind": "replay"},
        ]
    }
    cell = cell_of_campaign(
        campaign, BEGAN, bug="b", design="replicated-group", generator="random", trial=1, seed=7
    )
    assert (cell.found, cell.runs, cell.minutes, cell.kinds) == (True, 3, 1.5, ("lost",))
    assert (cell.folder, cell.run_seed, cell.unknown) == ("runs/random/x", 99, 1)
    quiet = {"runs": [_record(1, "held", "2026-11-26T08:00:01.500000Z", 29.0)]}
    none = cell_of_campaign(
        quiet, BEGAN, bug=None, design="active-passive", generator="random", trial=1, seed=7
    )
    assert (none.found, none.runs, none.minutes, none.name) == (False, 1, None, "(no bug)")


CELLS = [
    *cell_trials("a", "random", [2.0, None], canary=True, reached=0.5, triggered=1.5),
    *cell_trials("b", "random", [None, None], canary=True, reached=0.5),
    *cell_trials("a", "coverage", [1.0, 0.5], canary=True, reached=0.2, triggered=0.4),
    *cell_trials("b", "coverage", [3.0, None], canary=True),
    trial(None, "random", 1, None),
    CellResult(None, "active-passive", "random", 1, 11, False, 0, None, error="lab: error: x"),
]


def test_the_headline_counts_bugs_found_and_compares_paired_median_times() -> None:
    # a: random's median 2.0 (the low median of 2.0 and a miss), coverage's 0.5: 4.0x;
    # b: random never found it, so it is not compared.
    assert headline(CELLS, ("random", "coverage"), 600) == (
        "detection: random 1/2 found, median 2.0 min; coverage 2/2, median 1.0 min (4.0x) "
        "(campaigns of 10 min, 2 trials each)"
    )
    alone = [c for c in CELLS if c.generator == "random" and c.bug == "b"]
    assert headline(alone, ("random",), 300) == (
        "detection: random 0/1 found, none found (campaigns of 5 min, 2 trials each)"
    )


def test_the_headline_says_both_sets_when_bugs_were_written_after_the_generator() -> None:
    later = [
        *cell_trials("c", "random", [None], after_generator=True),
        *cell_trials("c", "coverage", [4.0], after_generator=True),
        *cell_trials("d", "coverage", [None], after_generator=True),
    ]
    assert headline([*CELLS, *later], ("random", "coverage"), 600) == (
        "detection: random 1/2 found before, 0/1 after, median 2.0 min; "
        "coverage 2/2 before, 1/2 after, median 2.0 min (4.0x) "
        "(campaigns of 10 min, 2 trials each)"
    )
    lines = table([*CELLS, *later], [], [], ("random", "coverage"))
    heads = [line for line in lines if line.startswith("-- ")]
    assert heads == [
        "-- written before the generator (2)",
        "-- written after the generator (2)",
        "-- the tree without a bug (2)",
    ]
    assert lines.index(heads[1]) < next(i for i, x in enumerate(lines) if x.startswith("c "))


def test_the_table_shows_each_bug_by_generator_with_its_stages_shrink_and_named_runs() -> None:
    shrinks = [ShrinkResult("a", "random", "shrunk", (40, 6), (18.0, 7.5), 9)]
    named = [
        NamedResult("a", "master-failure", "J1", "broken", ("lost",)),
        NamedResult("a", "quorum-loss", "J6", "held", reached=True, triggered=True),
        NamedResult("a", "disk-full", "J12", "refused", reason="needs root"),
    ]
    lines = table(CELLS, shrinks, named, ("random", "coverage"))
    assert lines[1].split() == [
        *("a", "replicated-group", "1/2", "2.0", "min", "4", "runs,", "shrunk", "40→6", "ops"),
        *("2/2", "0.8", "min", "4", "runs"),
    ]
    assert lines[2].strip() == (
        "random: reached 2/2 (0.5 min), triggered 2/2 (1.5 min), detected 1/2 (2.0 min); "
        "misses: 1 triggered, not detected"
    )
    assert lines[3].strip() == (
        "coverage: reached 2/2 (0.2 min), triggered 2/2 (0.4 min), detected 2/2 (0.8 min)"
    )
    assert lines[4].strip() == "kinds seen: lost"
    assert lines[5].strip() == (
        "named: 1/3 fail: J1 master-failure (lost) [J12 refused]; held though triggered: J6"
    )
    assert (named[1].stage, named[0].stage) == (" · triggered", "")
    assert NamedResult("a", "x", "J2", "held", reached=True, triggered=False).stage == " · reached"
    assert lines[6].split()[:3] == ["b", "replicated-group", "0/2"] and "(18 runs)" in lines[6]
    assert lines[7].strip() == (
        "random: reached 2/2 (0.5 min), triggered 0/2, detected 0/2; "
        "misses: 2 reached, never triggered"
    )
    assert lines[8].strip() == (
        "coverage: reached 0/2, triggered 0/2, detected 1/2 (3.0 min); "
        "misses: 1 never reached; 1 detected, canary never triggered"
    )
    assert lines[9].strip() == "kinds seen: lost"  # coverage found it
    assert lines[10].split()[:4] == ["(no", "bug)", "replicated-group", "0/1"]
    assert lines[11].split()[:4] == ["(no", "bug)", "active-passive", "0/1"]
    assert (
        "(1 failed to run)" in lines[11] and lines[12].strip() == "a campaign failed: lab: error: x"
    )


def test_the_named_scenarios_catch_a_bug_only_where_they_hold_without_it() -> None:
    named = [
        NamedResult("a", "master-failure", "J1", "broken", ("lost",)),
        NamedResult("b", "quorum-loss", "J6", "broken", ("lost",)),  # fails without a bug too
        NamedResult("b", "master-failure", "J1", "held"),
        NamedResult("c", "master-failure", "J1", "error", reason="not ready"),
        NamedResult(None, "master-failure", "J1", "held"),
        NamedResult(None, "quorum-loss", "J6", "broken", ("lost",)),
    ]
    assert named_summary(named) == "named scenarios caught 1/3 bugs (1/2 held without a bug)"


def test_named_runs_and_shrinks_are_read_from_what_the_commands_wrote(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "result.json").write_text(json.dumps({"verdict": "broken", "violations": ["lost"]}))
    found = named_of_run("a", "master-failure", "J1", 1, f"{folder}\nverdict\n", "")
    assert (found.verdict, found.kinds, found.failed) == ("broken", ("lost",), True)
    refused = named_of_run("a", "disk-full", "J12", 2, "", "lab: error: needs root\n")
    assert (refused.verdict, refused.reason, refused.failed) == (
        "refused",
        "error: needs root",
        False,
    )
    assert shrink_of("a", "random", 4, tmp_path).outcome == "did not reproduce"
    assert shrink_of("a", "random", 0, tmp_path).outcome == "error"  # no shrink.json
    (tmp_path / "shrink.json").write_text(
        json.dumps({"operations": [40, 6], "load_s": [18, 7.5], "reruns": 9})
    )
    done = shrink_of("a", "random", 0, tmp_path)
    assert (done.outcome, done.operations, done.shown()) == ("shrunk", (40, 6), "shrunk 40→6 ops")


def test_the_named_scenarios_are_j1_to_j13_and_c1_to_c8() -> None:
    replicated = named_scenarios("replicated-group")
    labels = [label for label, _ in replicated]
    assert labels == sorted(labels, key=lambda x: int(x[1:]))
    assert set(labels) == {f"J{i}" for i in range(1, 14)}
    assert ("J1", "master-failure") in replicated and ("J8", "never-priority-loss") in replicated
    cluster = named_scenarios("active-passive")
    assert [label for label, _ in cluster] == [f"C{i}" for i in range(1, 9)]


def test_the_zoo_is_listed_one_bug_a_line_name_first(tmp_path: Path) -> None:
    bugs = load_zoo()
    assert [line.split()[0] for line in list_zoo(bugs)] == [b.name for b in bugs]
    listed = run_lab("bench", "detection", "--list", cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout.splitlines() == list_zoo(bugs)


def test_the_cli_refuses_what_detection_cannot_do_with_one_line(tmp_path: Path) -> None:
    fuzz = run_lab("bench", "detection", "--generators", "random,fuzz", cwd=tmp_path)
    assert fuzz.returncode == 2 and fuzz.stdout == ""
    assert fuzz.stderr == "lab: error: unknown generator 'fuzz' (known: random, coverage)\n"
    other = run_lab("bench", "startup", "--trials", "2", cwd=tmp_path)
    assert other.returncode == 2
    assert other.stderr == "lab: error: --trials is an option of `lab bench detection` only\n"
    unknown = run_lab("bench", "detection", "--bugs", "nope", cwd=tmp_path)
    assert unknown.returncode == 2 and "no bug 'nope' in the zoo" in unknown.stderr


def test_the_controls_of_both_designs_have_campaign_folders_of_their_own() -> None:
    """Run at once (`--control --jobs 2`), the two controls once shared a folder: the second
    campaign refused it and the benchmark read the first one's runs as its own."""
    group = campaign_key(None, "replicated-group", "coverage", 1)
    ap = campaign_key(None, "active-passive", "coverage", 1)
    assert group != ap
    bug = load_zoo()[0]
    assert campaign_key(bug, bug.design, "coverage", 2) == f"{bug.name}-coverage-2"
