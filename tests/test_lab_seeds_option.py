"""The pytest plugin's `--lab-seeds`: every test that runs a scenario, once per seed, each
run's seed in suite.jsonl; a bad value refused before anything runs. Nothing here starts a
node: the scenario used is one Broker-J refuses before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.ground.errors import UsageError
from lab.targets.suite import SUITE_INDEX, read_index, seeds_option

pytest_plugins = ("pytester",)


@pytest.mark.parametrize(
    ("raw", "first", "seeds"),
    [
        ("3", None, (100, 101, 102)),
        ("2", "7", (7, 8)),
        ("7,8,9", None, (7, 8, 9)),
        (" 9, 7 ,9,", "1", (9, 7)),  # a list ignores --lab-seed; a repeat counts once
        ("1", None, (100,)),
    ],
)
def test_a_count_runs_on_from_the_first_seed_and_a_list_names_them(
    raw: str, first: str | None, seeds: tuple[int, ...]
) -> None:
    assert seeds_option(raw, first, 100) == seeds
    assert seeds_option(None, first, 100) is None


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("0", "between 1 and 1000"),
        ("five", "neither a count"),
        ("7,x", "bad seed 'x'"),
        (",", "names no seed"),
        ("7,-1", "bad seed '-1'"),
    ],
)
def test_a_bad_value_says_what_is_wrong(raw: str, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        seeds_option(raw, None, 100)


def test_each_scenario_test_runs_once_per_seed_and_the_index_names_the_seed(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(
        "def test_seed(lab_seed):\n    print(f'SEED={lab_seed}')\n"
        "def test_it(lab_run):\n    lab_run('primary-failure')\n"
        "def test_plain():\n    pass\n"
    )
    runs = tmp_path / "kept"
    result = pytester.runpytest(
        "-s", "-v", "--lab-seeds", "3,5", "--lab-target", "qpid-broker-j", "--lab-runs-dir", runs
    )
    # two seeds for each test that runs a scenario (or asks for a seed), one for the other
    result.assert_outcomes(passed=3, skipped=2)
    result.stdout.fnmatch_lines(["*test_seed?seed3?*SEED=3*", "*test_seed?seed5?*SEED=5*"])
    entries = read_index(runs / SUITE_INDEX)
    assert sorted(e["seed"] for e in entries) == [3, 5]
    assert {e["scenario"] for e in entries} == {"primary-failure"}
    assert all("refused" in e and isinstance(e["load"], float) for e in entries)
    assert [e["test"].rsplit("[", 1)[-1] for e in entries] == ["seed3]", "seed5]"]


def test_a_bad_seeds_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_it(lab_seed):\n    pass\n")
    result = pytester.runpytest("--lab-seeds", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--lab-seeds: '0': give between 1 and 1000 seeds*"])
