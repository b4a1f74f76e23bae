"""A run composed of parts as data: the runner with a cluster of nothing, the one reproduce
command for every target, backend and durability (and replays), result.json's one writer,
and the no-op parts."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from faults.fault import NoFault
from faults.nemesis import Nemesis
from lab.compose import parts_for
from lab.ground.errors import ClusterError, UsageError
from lab.ground.events import Events
from lab.ground.faultops import FaultOp
from lab.ground.nodes import BROKER_REF_TRAITS, TargetTraits
from lab.ground.spec import Durability, RunSpec, Workload
from lab.judge.columnar import fresh_history_parquet
from lab.judge.prediction import Prediction
from lab.run.cluster import Cluster, NoCluster, RunParts
from lab.run.reproduce import reproduce_command
from lab.run.runner import run_scenario
from lab.targets.protocol import NoTarget, traits_of
from scenarios.base import Scenario, fault_window
from scenarios.catalog import RUNNABLE, scenario_named

BROKER_J = TargetTraits("qpid-broker-j", election_allowance_s=5.0, restart_allowance_s=15.0)


def _nothing(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    return ()


QUIET = Scenario(
    name="quiet",
    summary="no clients, no faults",
    prediction=Prediction(text="nothing happens"),
    schedule=_nothing,
    workload=Workload(producers=0, consumers=0, duration_s=0.1, drain_timeout_s=0.1),
)


def _no_cluster(spec: RunSpec, work_dir: Path, events: Events) -> Cluster:
    return NoCluster()


def test_a_run_of_nothing_is_judged_unknown_and_written_whole(tmp_path: Path) -> None:
    parts = RunParts(QUIET, BROKER_REF_TRAITS, _no_cluster)
    spec = QUIET.spec(5)
    outcome = run_scenario(spec, parts, tmp_path)
    result = json.loads(outcome.folder.result.read_text())
    assert result["verdict"] == "unknown"
    assert result["reasons"] == ["no message was acknowledged: the prediction was not tested"]
    assert result["check"]["attempted"] == 0
    assert result["reproduce"] == outcome.reproduce
    assert outcome.folder.spec.is_file() and outcome.folder.history.is_file()
    assert not list(outcome.folder.path.glob("*.tmp"))
    # the columnar copies are written at the end of every run, fresh against the JSONL
    assert fresh_history_parquet(outcome.folder.history) is not None
    assert (outcome.folder.path / "events.parquet").is_file()


def test_a_run_stopped_while_it_is_judged_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lab.run import runner

    def stopped_here(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "judge_run", stopped_here)
    parts = RunParts(QUIET, BROKER_REF_TRAITS, _no_cluster)
    with pytest.raises(KeyboardInterrupt):
        run_scenario(QUIET.spec(5), parts, tmp_path)
    result = json.loads(next(tmp_path.glob("*/*/result.json")).read_text())
    assert result["verdict"] == "interrupted"
    assert result["interrupted"]["phase"] == "judge"


def test_a_run_whose_cluster_fails_says_how_to_reproduce_it(tmp_path: Path) -> None:
    class Unstartable(NoCluster):
        def start(self) -> str:
            raise ClusterError("no engine")

    def failing(spec: RunSpec, work_dir: Path, events: Events) -> Cluster:
        return Unstartable()

    scenario = scenario_named("master-failure")
    parts = RunParts(scenario, BROKER_J, failing)
    spec = scenario.spec(7, target=BROKER_J, durability=Durability("NO_SYNC", "NO_SYNC", "NONE"))
    with pytest.raises(ClusterError) as raised:
        run_scenario(spec, parts, tmp_path)
    notes = raised.value.__notes__
    command = next(n for n in notes if n.startswith("reproduce: ")).removeprefix("reproduce: ")
    assert "--target qpid-broker-j" in command
    assert "--durability NO_SYNC,NO_SYNC,NONE --coalescing" in command
    result = json.loads(next(tmp_path.glob("master-failure/*/result.json")).read_text())
    assert result["verdict"] == "unknown" and result["error"] == "ClusterError: no engine"
    assert result["target"] == "qpid-broker-j"
    assert result["reproduce"] == command


@pytest.mark.parametrize("name", sorted(RUNNABLE))
@pytest.mark.parametrize("target", [BROKER_REF_TRAITS, BROKER_J], ids=["broker_ref", "broker-j"])
@pytest.mark.parametrize("backend", ["process", "docker"])
def test_the_reproduce_command_runs_what_ran(
    name: str, target: TargetTraits, backend: str, tmp_path: Path
) -> None:
    scenario = scenario_named(name)
    parts = RunParts(scenario, target, _no_cluster)
    spec = scenario.spec(42, backend=backend, target=target)
    command = reproduce_command(spec, tmp_path, parts, lab="lab")
    words = command.split()
    assert words[:5] == ["lab", "run", name, "--seed", "42"]
    assert ("--backend" in words) == (backend != "process")
    assert ("--target" in words) == (target.name != "broker_ref")
    if "--target" in words:
        assert words[words.index("--target") + 1] == target.name
    # What the command makes is exactly what ran.
    again = scenario.spec(42, backend=backend, target=target)
    assert again == spec


def test_durability_is_in_the_command_when_it_is_not_the_scenarios(tmp_path: Path) -> None:
    scenario = scenario_named("durability-matrix")
    parts = RunParts(scenario, BROKER_REF_TRAITS, _no_cluster)
    durability = Durability("SYNC", "SYNC", "ALL", coalescing_sync=False)
    spec = scenario.spec(3, durability=durability)
    command = reproduce_command(spec, tmp_path, parts)
    assert command.endswith("--durability SYNC,SYNC,ALL --no-coalescing")
    default = reproduce_command(scenario.spec(3), tmp_path, parts)
    assert "--durability" not in default


def test_a_schedule_not_made_from_the_seed_is_reproduced_by_replay(tmp_path: Path) -> None:
    scenario = scenario_named("master-failure")
    parts = RunParts(scenario, BROKER_REF_TRAITS, _no_cluster)
    spec = scenario.spec(9)
    edited = spec.with_schedule(fault_window("kill", "n2", 3.0, 1.0, "f1"))
    assert reproduce_command(edited, tmp_path / "run", parts, lab="/opt/lab/bin/lab") == (
        f"/opt/lab/bin/lab replay {tmp_path / 'run'}"
    )
    longer = replace(spec, workload=replace(spec.workload, duration_s=99.0))
    assert reproduce_command(longer, tmp_path, parts).split()[1] == "replay"
    # Without the parts it ran with (a folder read back later), a replay is the honest answer.
    assert reproduce_command(spec, tmp_path, None).split()[1] == "replay"


def test_a_replayed_spec_reproduces_as_the_seed_does(tmp_path: Path) -> None:
    scenario = scenario_named("quorum-loss")
    parts = RunParts(scenario, BROKER_REF_TRAITS, _no_cluster)
    spec = scenario.spec(11, backend="docker")
    read_back = RunSpec.from_json(json.loads(json.dumps(spec.to_json())), tmp_path / "spec.json")
    assert read_back == spec
    assert reproduce_command(read_back, tmp_path, parts) == reproduce_command(spec, tmp_path, parts)


def test_composition_refuses_what_cannot_run_before_anything_starts() -> None:
    with pytest.raises(UsageError, match="unknown backend 'vm'"):
        parts_for("master-failure", "vm", "broker_ref")
    with pytest.raises(UsageError, match="unknown scenario 'nope'"):
        parts_for("nope", "process", "broker_ref")
    with pytest.raises(UsageError, match="unknown target 'rabbit'"):
        parts_for("master-failure", "process", "rabbit")
    parts = parts_for("master-failure", "process", "broker_ref")
    assert parts.scenario.name == "master-failure" and parts.target == BROKER_REF_TRAITS


def test_the_no_op_parts_compose() -> None:
    assert traits_of(NoTarget()) == TargetTraits("none")
    cluster = NoCluster()
    assert cluster.start() == "" and cluster.client_urls() == [] and cluster.statuses() == {}
    ops = fault_window("noop", "n1", 0.0, 0.0, "f1")
    logged: list[dict[str, object]] = []
    with Nemesis(cluster, faults={"noop": NoFault()}, log=logged.append) as nemesis:
        nemesis.run(ops, started_at_ns=0, keep_going=lambda: True)
    assert [(e["action"], e["ok"]) for e in logged] == [("start", True), ("stop", True)]


def test_a_group_the_target_cannot_form_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    class Refusing(NoCluster):
        def check(self) -> None:
            raise UsageError("this target cannot form that group")

    def refusing(spec: RunSpec, work_dir: Path, events: Events) -> Cluster:
        return Refusing()

    parts = RunParts(QUIET, BROKER_REF_TRAITS, refusing)
    with pytest.raises(UsageError, match="cannot form") as raised:
        run_scenario(QUIET.spec(1), parts, tmp_path)
    assert not getattr(raised.value, "__notes__", None)
    assert not list(tmp_path.iterdir())
