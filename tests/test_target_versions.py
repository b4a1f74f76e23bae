"""The version of a target a run uses (`--target qpid-broker-j@9.1.0`): asked for on the
command line, in an incident file and in the pytest plugin, recorded in spec.json only
when it is not the target's default (so specs and failure ids stay as they were), in
result.json always, reproduced by the run's command, matched by deviations limited to
versions, refused on the docker backend (its images hold the default versions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_deviations import _check, _metrics

from lab.campaign.failures import Failure, failure_id
from lab.campaign.plan import CampaignRequest
from lab.compose import parts_for
from lab.ground.errors import InputError, UsageError
from lab.ground.nodes import TargetTraits
from lab.ground.spec import RunSpec
from lab.judge.deviations import Declarations, parse_declarations
from lab.judge.prediction import Prediction, Verdict
from lab.judge.result import Judgement, RunResult
from lab.run.incident import load_edited_spec, load_incident
from lab.run.reproduce import reproduce_command
from lab.targets.brokerj.distribution import VERSION

OLDER = "9.1.0"


def test_a_version_other_than_the_default_is_in_the_spec_and_its_id() -> None:
    default = parts_for("master-failure", "process", "qpid-broker-j")
    older = parts_for("master-failure", "process", f"qpid-broker-j@{OLDER}")
    assert (default.target.version, default.target.chosen_version) == (VERSION, None)
    assert (older.target.version, older.target.chosen_version) == (OLDER, OLDER)
    at_default = default.scenario.spec(7, target=default.target).to_json()
    at_older = older.scenario.spec(7, target=older.target).to_json()
    assert "target_version" not in at_default  # as every spec.json before versions
    assert at_older["target_version"] == OLDER
    named = parts_for("master-failure", "process", f"qpid-broker-j@{VERSION}")
    assert named.scenario.spec(7, target=named.target).to_json() == at_default
    assert failure_id(at_default) != failure_id(at_older)
    again = RunSpec.from_json(at_older, Path("spec.json"))
    assert (again.target_version, again.target_ref) == (OLDER, f"qpid-broker-j@{OLDER}")


def test_the_docker_backend_runs_default_versions_only() -> None:
    with pytest.raises(UsageError, match=r"qpid-broker-j@9\.1\.0: the docker backend's images"):
        parts_for("master-failure", "docker", f"qpid-broker-j@{OLDER}")
    assert parts_for("master-failure", "docker", f"qpid-broker-j@{VERSION}").target.name


def test_an_incident_names_a_version_either_way(tmp_path: Path) -> None:
    base = "seed = 1\n[topology]\nnodes = 3\n[workload]\nduration_s = 8.0\n"
    at = tmp_path / "at.toml"
    at.write_text(f'target = "qpid-broker-j@{OLDER}"\n' + base)
    split = tmp_path / "split.toml"
    split.write_text(f'target = "qpid-broker-j"\ntarget_version = "{OLDER}"\n' + base)
    assert load_incident(at) == load_incident(split)
    assert load_incident(at).target_ref == f"qpid-broker-j@{OLDER}"
    bare = tmp_path / "bare.toml"
    bare.write_text(base)
    given = load_incident(bare, {"target": f"qpid-broker-j@{OLDER}", "backend": "docker"})
    assert (given.target_ref, given.backend) == (f"qpid-broker-j@{OLDER}", "docker")
    assert load_incident(bare).target_ref == "broker_ref"
    both = tmp_path / "both.toml"
    both.write_text(f'target = "qpid-broker-j@9.0.0"\ntarget_version = "{OLDER}"\n' + base)
    with pytest.raises(
        InputError, match=r"target_version: 9\.1\.0 differs from the target.s @9\.0\.0"
    ):
        load_incident(both)
    bad = tmp_path / "bad.toml"
    bad.write_text('target = "qpid-broker-j@"\n' + base)
    with pytest.raises(InputError, match=r"bad\.toml: target 'qpid-broker-j@': write NAME@VERSION"):
        load_incident(bad)
    edited = {**load_incident(at).to_json(), "target_version": 9}
    with pytest.raises(InputError, match=r"spec\.json: target_version: must be a version"):
        load_edited_spec(edited, Path("spec.json"))


def test_result_json_says_which_version_ran_and_the_command_names_it(tmp_path: Path) -> None:
    parts = parts_for("master-failure", "process", f"qpid-broker-j@{OLDER}")
    spec = parts.scenario.spec(7, target=parts.target)
    judged = Judgement(Prediction("p"), _check(), _metrics(0), Verdict("held", ()))
    plain = RunResult.judged(spec, judged, "…").to_json()
    assert "target_version" not in plain  # a judgement that knows no version says none
    raw = RunResult.judged(spec, _with_version(judged, OLDER), "…").to_json()
    assert (raw["target"], raw["target_version"]) == ("qpid-broker-j", OLDER)
    command = reproduce_command(spec, tmp_path, parts)
    assert command.endswith(f"--seed 7 --target qpid-broker-j@{OLDER}")


def _with_version(judgement: Judgement, version: str) -> Judgement:
    fields = {**vars(judgement), "target_version": version}
    return Judgement(**fields)


def test_a_deviation_limited_to_versions_applies_to_those_only() -> None:
    raw = {
        "target": "qpid-broker-j",
        "deviation": [
            {
                "id": "J3", "scenario": "replica-failure", "predicted": "p", "observed": "o",
                "evidence": "e", "command": "c", "versions": [VERSION],
                "match": {"violations": ["unavailable>bound"]},
            }
        ],
    }  # fmt: skip
    found: Declarations = parse_declarations(raw, "f.toml")
    mode = "replicated-group"
    seen = found.for_run("replica-failure", "process", mode, version=VERSION)
    assert [d.id for d in seen] == ["J3"]
    assert found.for_run("replica-failure", "process", mode, version=OLDER) == ()
    raw["deviation"][0]["versions"] = "9.2.1"  # type: ignore[index]
    with pytest.raises(ValueError, match="versions must be a list of strings"):
        parse_declarations(raw, "f.toml")


def test_campaigns_take_versions_and_failures_remember_them(tmp_path: Path) -> None:
    request = CampaignRequest(
        budget_s=60, seed=1, scenarios=("master-failure",),
        targets=("qpid-broker-j", f"qpid-broker-j@{OLDER}"),
    )  # fmt: skip
    cells, _ = request.cells()
    assert [c.target for c in cells] == ["qpid-broker-j", f"qpid-broker-j@{OLDER}"]
    with pytest.raises(UsageError, match="unknown target 'rabbit'"):
        CampaignRequest(budget_s=60, seed=1, targets=("rabbit@3",))
    parts = parts_for("master-failure", "process", f"qpid-broker-j@{OLDER}")
    folder = tmp_path / "run"
    folder.mkdir()
    spec = parts.scenario.spec(7, target=parts.target)
    (folder / "spec.json").write_text(json.dumps(spec.to_json()))
    (folder / "result.json").write_text(json.dumps({"verdict": "broken", "violations": ["lost"]}))
    failure = Failure.of_run(folder)
    assert failure is not None and failure.target == f"qpid-broker-j@{OLDER}"


def test_traits_say_the_version_a_spec_records() -> None:
    assert TargetTraits().chosen_version is None
    assert TargetTraits("x", version="2", default_version="2").chosen_version is None
    assert TargetTraits("x", version="1", default_version="2").chosen_version == "1"


def test_a_broker_j_release_that_cannot_read_the_lab_s_configuration_is_refused() -> None:
    with pytest.raises(UsageError, match=r"configuration model 9\.0, which releases before 9"):
        parts_for("master-failure", "process", "qpid-broker-j@8.0.6")
