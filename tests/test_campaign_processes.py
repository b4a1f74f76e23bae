"""`lab campaign` on real processes: runs inside the budget, two at a time; a failure it
saw is recorded, and the next campaign replays it first; the same campaign as a pytest
session under xdist."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from itertools import islice
from pathlib import Path

import pytest
from conftest import run_lab

from lab.campaign.campaign import estimate_s
from lab.campaign.failures import Failure, FailureDB
from lab.campaign.plan import CampaignRequest, Cell

ROOT = Path(__file__).resolve().parent.parent
LOSES = ROOT / "incidents" / "ack-none-crash.toml"

pytestmark = pytest.mark.processes


def _when(stamp: str) -> dt.datetime:
    """A UTC time stamp of campaign.json: with a fraction of a second (a run's) or not."""
    form = "%Y-%m-%dT%H:%M:%S.%fZ" if "." in stamp else "%Y-%m-%dT%H:%M:%SZ"
    return dt.datetime.strptime(stamp, form)


def test_a_campaign_runs_inside_its_budget_two_at_a_time(tmp_path: Path) -> None:
    out = tmp_path / "night"  # given relative to the folder the campaign starts from
    result = run_lab(
        *("campaign", "--budget", "45s", "--scenarios", "single-node-crash", "--jobs", "2"),
        *("--no-report", "--out", "night", "--failures-dir", str(tmp_path / "db")),
        cwd=tmp_path,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    campaign = json.loads((out / "campaign.json").read_text())
    runs = campaign["runs"]
    assert len(runs) >= 2 and campaign["counts"]["held"] == len(runs)
    # No run started that could not end in the budget by the campaign's own estimate (its
    # cell's longest run that had ended by then, or the first guess); how long the runs then
    # took depends on the machine, and is not asserted.
    began = _when(campaign["started"])
    for run in runs:
        start = _when(run["started"])
        ended = [
            r["seconds"]
            for r in runs
            if _when(r["started"]) + dt.timedelta(seconds=r["seconds"]) <= start
        ]
        cell = Cell(run["scenario"], run["target"], run["backend"], run["mode"])
        needed = max(ended) if ended else estimate_s(cell)
        offset = (start - began).total_seconds()
        assert offset + needed <= 45 + 1, f"run {run['number']} could not end in the budget"
    for run in runs:
        verdict = json.loads((out / run["folder"] / "result.json").read_text())["verdict"]
        assert verdict == run["verdict"] == "held"
    starts = sorted(_when(r["started"]) for r in runs)
    ends = sorted(_when(r["started"]) + dt.timedelta(seconds=r["seconds"]) for r in runs)
    assert starts[1] < ends[0], "the second run should start before the first ends (--jobs 2)"
    assert list(FailureDB(tmp_path / "db")) == []
    assert result.stdout.splitlines()[-1] == "night"  # the folder, as it was given


def test_a_recorded_failure_is_replayed_first_and_still_fails(tmp_path: Path) -> None:
    first = run_lab("run", "--spec", str(LOSES), "--runs-dir", str(tmp_path / "r"), cwd=tmp_path)
    assert first.returncode == 1, first.stdout + first.stderr  # acknowledged messages lost
    db = FailureDB(tmp_path / "db")
    seen = Failure.of_run(Path(first.stdout.splitlines()[0]))
    assert seen is not None and seen.violations == ("lost",)
    db.record(seen)

    out = tmp_path / "night"
    result = run_lab(
        *("campaign", "--budget", "40s", "--scenarios", "random", "--no-report"),
        *("--out", str(out), "--failures-dir", str(tmp_path / "db")),
        cwd=tmp_path,
        timeout=240,
    )
    campaign = json.loads((out / "campaign.json").read_text())
    replay = campaign["runs"][0]
    assert (replay["kind"], replay["failure"], replay["reproduced"]) == ("replay", seen.id, True)
    assert campaign["replays"][0]["outcome"] == "still failing"
    assert campaign["replays"][0]["status"] == "failing"
    assert f"failure {seen.id}: still failing" in result.stdout
    assert result.returncode == (1 if campaign["new_failures"] else 0)
    listed = run_lab("failures", "list", "--failures-dir", str(tmp_path / "db"), cwd=tmp_path)
    assert listed.returncode == 0 and f"{seen.id}  failing" in listed.stdout


# Long: tests/test_campaign_pytest_entry.py runs campaigns as pytest sessions by default.
@pytest.mark.long
def test_the_same_campaign_as_a_pytest_session_with_xdist(tmp_path: Path) -> None:
    out = tmp_path / "night"
    result = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "scenarios/test_campaign.py", "-q", "-n", "2"),
            # a budget a busy machine's start of two xdist workers does not use up
            *("-p", "no:cacheprovider", "--lab-campaign", "75s"),
            *("--lab-campaign-scenarios", "single-node-crash", "--lab-campaign-seed", "5"),
            *("--lab-campaign-out", str(out), "--lab-failures-dir", str(tmp_path / "db")),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    campaign = json.loads((out / "campaign.json").read_text())
    assert campaign["request"]["seed"] == 5 and campaign["counts"]["runs"] >= 2
    assert campaign["counts"]["held"] == campaign["counts"]["runs"]
    assert "lab campaign:" in result.stdout and str(out) in result.stdout
    lab = CampaignRequest(budget_s=75, seed=5, scenarios=("single-node-crash",))
    cells, _ = lab.cells()
    planned = {d.seed for d in islice(lab.draws(cells), 20)}
    assert {r["seed"] for r in campaign["runs"]} <= planned  # one plan behind both doors
