"""`lab campaign --guide coverage` on real processes: every run an ordinary run of `random`
whose spec.json holds the schedule and workload the guide chose (what `lab replay` runs); the
coverage after each run, the corpus and the decisions' log in the campaign folder, and the
log replaying into the same decisions. Longer modes (both HA designs, replays of guided
runs, the pytest session under xdist, merged shards) run with --lab-long."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import run_lab

from lab.campaign.coverage import read_points
from lab.campaign.guide import ARMS, CoverageGuide
from lab.campaign.guide_files import GuideFiles, replay
from lab.campaign.plan import Shard
from lab.ground.spec import RunSpec
from lab.run.incident import load_edited_spec
from scenarios.random_rule import rule_problem

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.processes
_MADE_BY = ("lab_version", "git_revision")


def _campaign(tmp_path: Path, out: Path, budget: str, *extra: str, timeout: float) -> Any:
    result = run_lab(
        *("campaign", "--guide", "coverage", "--budget", budget, "--no-report"),
        *("--out", str(out), "--failures-dir", str(tmp_path / "db"), *extra),
        cwd=tmp_path,
        timeout=timeout,
    )
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return result


def _spec_of(folder: Path) -> dict[str, Any]:
    raw = json.loads((folder / "spec.json").read_text())
    return {k: v for k, v in raw.items() if k not in _MADE_BY}


def _check_folder(out: Path, seed: int, in_order: bool = True) -> list[dict[str, Any]]:
    """What every guided campaign folder holds, checked; its runs. (`in_order`: campaign.json
    lists the runs in the order they were recorded, as `lab campaign` writes it.)"""
    campaign = json.loads((out / "campaign.json").read_text())
    runs: list[dict[str, Any]] = campaign["runs"]
    assert runs and campaign["request"]["guide"] == "coverage"
    points = read_points(out / "coverage.jsonl")
    numbers = [r["number"] for r in runs]
    if in_order:
        assert [p.run for p in points] == numbers
    assert sorted(p.run for p in points) == sorted(numbers)
    totals = [p.behaviours for p in points]
    assert totals == sorted(totals) and totals[-1] == campaign["coverage"]["behaviours"]
    assert points[0].new == points[0].features and len(points[0].features) > 10
    assert any(run["folder"] for run in runs)
    for run in runs:
        assert run["origin"] in ARMS
        if run["folder"] is None:  # a run the lab could not finish (said in its record)
            continue
        folder = out / run["folder"]
        given = json.loads((out / "specs" / f"{run['number']}.json").read_text())
        assert _spec_of(folder) == {k: v for k, v in given.items() if k not in _MADE_BY}
        spec = load_edited_spec(json.loads((folder / "spec.json").read_text()), folder)
        assert rule_problem(spec) is None  # judged by `random`'s prediction, rightly
    # The decisions, made again from the log, are the ones the campaign made.
    made = replay(CoverageGuide(seed, Shard(1, 1)), GuideFiles(out).read_log())
    assert sorted(p.number for p in made) == sorted(r["number"] for r in runs)
    by_number = {r["number"]: r for r in runs}
    for proposal in made:
        assert proposal.spec is not None
        assert proposal.origin == by_number[proposal.number]["origin"]
        if by_number[proposal.number]["folder"] is None:
            continue
        folder = out / by_number[proposal.number]["folder"]
        assert _spec_of(folder) == {
            k: v for k, v in proposal.spec.to_json().items() if k not in _MADE_BY
        }
    corpus = sorted(int(p.stem) for p in (out / "corpus").glob("*.json"))
    assert corpus == sorted(p.run for p in points if p.new)
    return runs


def test_a_short_guided_campaign_makes_ordinary_runs_it_can_replay(tmp_path: Path) -> None:
    out = tmp_path / "night"
    result = _campaign(tmp_path, out, "45s", "--jobs", "2", "--seed", "9", timeout=300)
    runs = _check_folder(out, 9)
    assert len(runs) >= 2  # two at once (a busy machine may fit no more in the budget)
    assert "coverage: " in result.stdout and "distinct behaviours" in result.stdout
    entry = json.loads((out / "corpus" / "1.json").read_text())
    assert entry["run"] == 1 and entry["new"] and RunSpec.from_json(entry["spec"], out)


@pytest.mark.long
def test_a_guided_night_over_both_designs_replays_and_merges(tmp_path: Path) -> None:
    """Two shards of a guided campaign over both HA designs, each run's spec checked; one
    mutated run replayed with `lab replay`; the shards merged with their coverage."""
    shards = [tmp_path / "a", tmp_path / "b"]
    for index, out in enumerate(shards, start=1):
        _campaign(
            tmp_path,
            out,
            "4m",
            *("--jobs", "2", "--seed", "12", "--shard", f"{index}/2"),
            *("--mode", "replicated-group,active-passive"),
            timeout=900,
        )
    runs = [_check_sharded(out, index) for index, out in enumerate(shards, start=1)]
    modes = {r["mode"] for rs in runs for r in rs}
    assert modes == {"replicated-group", "active-passive"}
    mutated = next(
        (r, out)
        for rs, out in zip(runs, shards, strict=True)
        for r in rs
        if r["parent"] and r["folder"] and r["verdict"] == "held"
    )
    record, out = mutated
    again = run_lab("replay", str(out / record["folder"]), cwd=tmp_path, timeout=300)
    assert again.returncode in (0, 1), again.stdout + again.stderr
    assert "replay: held " in again.stdout  # (1/1, unless a busy machine made it unknown)
    replayed = Path(again.stdout.splitlines()[0])
    assert _spec_of(replayed) == _spec_of(out / record["folder"])  # the same run again
    merged = tmp_path / "merged"
    done = run_lab(
        "campaign",
        "merge",
        *map(str, shards),
        "--out",
        str(merged),
        "--no-report",
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    campaign = json.loads((merged / "campaign.json").read_text())
    points = read_points(merged / "coverage.jsonl")
    assert [p.run for p in points] == [r["number"] for r in campaign["runs"]]
    each = [read_points(out / "coverage.jsonl")[-1].behaviours for out in shards]
    assert max(each) <= points[-1].behaviours <= sum(each)
    for entry in (merged / "corpus").glob("*.json"):
        raw = json.loads(entry.read_text())
        assert (merged / raw["folder"] / "spec.json").is_file()


def _check_sharded(out: Path, index: int) -> list[dict[str, Any]]:
    campaign = json.loads((out / "campaign.json").read_text())
    seed = campaign["request"]["seed"]
    made = replay(CoverageGuide(seed, Shard(index, 2)), GuideFiles(out).read_log())
    assert len(made) == len(campaign["runs"])
    for run in campaign["runs"]:
        if run["folder"] is None:
            continue
        folder = out / run["folder"]
        spec = load_edited_spec(json.loads((folder / "spec.json").read_text()), folder)
        assert rule_problem(spec) is None
    return list(campaign["runs"])


@pytest.mark.long
def test_the_guided_campaign_as_a_pytest_session_with_xdist(tmp_path: Path) -> None:
    out = tmp_path / "night"
    result = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "scenarios/test_campaign.py", "-q", "-n", "2"),
            *("-p", "no:cacheprovider", "--lab-campaign", "2m", "--lab-campaign-seed", "5"),
            *("--lab-campaign-guide", "coverage", "--lab-campaign-out", str(out)),
            *("--lab-failures-dir", str(tmp_path / "db")),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    runs = _check_folder(out, 5, in_order=False)
    assert len(runs) >= 4
    assert "coverage: " in result.stdout
