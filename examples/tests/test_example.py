"""The example's own suite: its broker under an incident file, under a scenario written
here, and its entry points as `lab list`, `lab run` and `lab campaign` see them.

Run from this folder with the virtual environment the lab and the example are installed
in: `.venv/bin/pytest tests` (pyproject.toml sets `--lab-target example-broker`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from lab.api import (
    Prediction,
    RoleAtEnd,
    RunOutcome,
    Scenario,
    Topology,
    Workload,
    fault_window,
    scheduled,
)

HERE = Path(__file__).resolve().parent.parent
LAB = Path(sys.executable).with_name("lab")  # the lab command of this environment

Run = Callable[..., RunOutcome]


def _held_without_loss(outcome: RunOutcome) -> None:
    assert outcome.check.acknowledged > 0, outcome.summary
    assert outcome.check.lost.count == 0, outcome.summary
    assert outcome.verdict.held, f"{outcome.summary}\nrun folder: {outcome.folder.path}"


def test_an_incident_file_runs_on_the_sessions_target(lab_run: Run) -> None:
    outcome = lab_run(HERE / "incidents" / "replica-paused.toml")
    _held_without_loss(outcome)
    assert outcome.spec.target == "example-broker"  # the file names none: the session's
    paused = [e for e in outcome.events if e["kind"] == "fault.start" and e["id"] == "p1"]
    assert [e["fault"] for e in paused] == ["pause"]
    result = json.loads(outcome.folder.result.read_text())
    assert (result["scenario"], result["target"]) == ("incident", "example-broker")
    # The nodes were started by the user's own command, with the user's settings.
    started = (outcome.folder.path / "nodes" / "n1" / "stderr.log").read_text()
    assert "lab_example: starting" in started and "'election_timeout_s': 1.0" in started


# A scenario of this file only: a fixed schedule (`scheduled`), the same for every seed.
REPLICA_RESTART = Scenario(
    name="replica-restart",
    summary="a replica killed under load and restarted two seconds later",
    prediction=Prediction(
        text="nothing acknowledged is lost, never two masters, the replica back as a replica",
        two_masters="forbidden",
        expect=(RoleAtEnd("f1", "REPLICA"),),
    ),
    schedule=scheduled(fault_window("kill", "@replica:1", 1.0, 2.0, "f1")),
    topology=Topology(nodes=3),
    workload=Workload(producers=1, consumers=1, rate=100.0, duration_s=8.0),
)


def test_a_scenario_written_in_the_test_file(lab_run: Run) -> None:
    outcome = lab_run(REPLICA_RESTART, seed=11)
    _held_without_loss(outcome)
    assert outcome.spec.scenario == "replica-restart" and outcome.spec.seed == 11
    kinds = [(e["kind"], e.get("id")) for e in outcome.events if e["kind"].startswith("fault.")]
    assert kinds == [("fault.start", "f1"), ("fault.end", "f1")]
    # No `lab run` knows this scenario: the test itself is the command that runs it again.
    assert "pytest" in outcome.reproduce and "--lab-seed 11" in outcome.reproduce


def test_the_isolated_master_loses_nothing_on_a_correct_broker(lab_run: Run) -> None:
    """The project's second scenario, the one its nightly finds a planted bug with
    (tests/test_example_night.py in the lab): on the broker as it is, it holds."""
    outcome = lab_run("example-isolated-master", seed=2)
    _held_without_loss(outcome)
    isolated = [e for e in outcome.events if e["kind"] == "fault.start" and e["id"] == "f1"]
    assert [e["fault"] for e in isolated] == ["isolate"]


def _lab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LAB), *args], capture_output=True, text=True, timeout=600, check=False
    )


def test_lab_list_shows_the_entry_points_and_where_they_come_from() -> None:
    listed = _lab("list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    scenario = next(line for line in lines if line.startswith("example-failover "))
    assert "entry point of lab-example 0.1.0 (lab_example.scenarios:EXAMPLE_FAILOVER)" in scenario
    target = next(line for line in lines if line.split()[:1] == ["example-broker"])
    assert "entry point of lab-example 0.1.0 (lab_example.target:ExampleBroker)" in target
    assert any(line.split()[:2] == ["broker_ref", "built-in"] for line in lines)


def test_lab_run_and_a_campaign_run_the_entry_points(tmp_path: Path) -> None:
    ran = _lab(
        *("run", "example-failover", "--seed", "3", "--target", "example-broker"),
        *("--runs-dir", str(tmp_path / "runs")),
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    folder = Path(ran.stdout.splitlines()[0])
    result = json.loads((folder / "result.json").read_text())
    assert (result["scenario"], result["target"], result["verdict"]) == (
        "example-failover",
        "example-broker",
        "held",
    )
    assert "lab run example-failover --seed 3 --target example-broker" in result["reproduce"]

    out = tmp_path / "campaign"
    campaign = _lab(
        *("campaign", "--budget", "25s", "--scenarios", "example-failover"),
        *("--targets", "example-broker", "--seed", "1", "--out", str(out)),
        *("--failures-dir", str(tmp_path / "failures"), "--no-report"),
    )
    assert campaign.returncode == 0, campaign.stdout + campaign.stderr
    records = json.loads((out / "campaign.json").read_text())["runs"]
    assert records and {(r["scenario"], r["target"]) for r in records} == {
        ("example-failover", "example-broker")
    }
    assert all(r["verdict"] == "held" for r in records), records
