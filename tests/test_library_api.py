"""The lab as a library: `lab.api` names exactly what is stable, and `lab.library` plans a
run from a name, an incident file or a Scenario object as `lab run` would. `lab list`
says where each scenario and target comes from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import lab.api
from lab.cli.main import main
from lab.ground.errors import UsageError
from lab.library import plan_run
from scenarios.base import Scenario
from scenarios.catalog import SCENARIOS

PUBLIC = {
    # running
    "run", "Runnable", "RunOutcome", "RunSpec", "Verdict", "CheckResult",
    # scenarios and predictions
    "Scenario", "ScheduleFn", "FaultOp", "fault_window", "fault_when", "scheduled", "uniform",
    "Topology", "Workload", "Durability", "GroupSettings",
    "Prediction", "Expectation", "RunFacts",
    "LogSeen", "RoleAtEnd", "RoleNever", "ServiceContinued", "ServiceResumed", "ServiceStopped",
    # targets
    "Target", "Versioned", "TargetTraits", "ClusterPlan", "NodePlan", "NodeStatus",
    "LogRecord", "ContainerLaunch", "RestManagement", "parse_oplog_line",
    "BrokerRefTarget", "broker_ref_config",
    # entry points and errors
    "SCENARIO_GROUP", "TARGET_GROUP",
    "LabError", "UsageError", "InputError", "SetupError", "PluginError", "ClusterError",
}  # fmt: skip


def test_lab_api_names_exactly_what_is_public() -> None:
    assert set(lab.api.__all__) == PUBLIC
    assert len(lab.api.__all__) == len(PUBLIC)  # each once
    for name in lab.api.__all__:
        assert getattr(lab.api, name) is not None, name
    # (names pytest's assertion rewriting adds, `@py_builtins` …, are no names of the module)
    ours = (n for n in vars(lab.api) if not n.startswith(("_", "@")))
    defined = {n for n in ours if n != "annotations"}
    assert defined == PUBLIC, "lab.api defines names it does not export (or the reverse)"
    assert (lab.api.SCENARIO_GROUP, lab.api.TARGET_GROUP) == ("lab.scenarios", "lab.targets")


def test_every_public_name_is_in_the_library_page() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "library.md").read_text()
    missing = sorted(n for n in PUBLIC if f"`{n}`" not in page)
    assert not missing, f"docs/library.md does not name {missing}"


MINE = Scenario(
    name="mine",
    summary="a scenario of a test file",
    prediction=lab.api.Prediction("nothing acknowledged is lost"),
    schedule=lab.api.scheduled(lab.api.fault_window("kill", "@master", 1.0, 2.0, "f1")),
    topology=lab.api.Topology(nodes=3),
)


def test_a_run_is_planned_from_a_scenario_object_a_name_or_an_incident(tmp_path: Path) -> None:
    mine = plan_run(MINE, seed=4, work_dir=tmp_path)
    assert (mine.spec.scenario, mine.spec.seed, mine.registered) == ("mine", 4, False)
    assert [op.at_s for op in mine.spec.schedule] == [1.0, 3.0]
    named = plan_run("master-failure", seed=4, work_dir=tmp_path)
    assert named.registered and named.parts.scenario is SCENARIOS["master-failure"]
    incident = tmp_path / "incident.toml"
    incident.write_text("seed = 2\n[topology]\nnodes = 3\n")
    planned = plan_run(incident, target="broker_ref", work_dir=tmp_path)
    assert (planned.spec.scenario, planned.spec.seed, planned.registered) == ("incident", 2, True)
    with pytest.raises(UsageError, match="an incident file gives its own seed"):
        plan_run(incident, seed=3, work_dir=tmp_path)
    with pytest.raises(UsageError, match="'incident' runs an incident file: give its Path"):
        plan_run("incident", work_dir=tmp_path)


def test_lab_list_says_where_each_scenario_and_target_comes_from(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = {line.split()[0] for line in lines if line and not line.startswith(" ")}
    assert set(SCENARIOS) <= listed
    targets = lines[lines.index(next(x for x in lines if x.startswith("targets"))) + 1 :]
    assert targets[0].split() == ["broker_ref", "built-in"]
    assert targets[1].split()[:2] == ["qpid-broker-j", "built-in;"]
    assert "versions: default 9.2.1" in targets[1]


def _page_s_lab_list_targets() -> list[str]:
    """The built-in targets' lines of the `lab list` docs/library.md shows."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "library.md").read_text()
    shown = page[page.index("$ .venv/bin/lab list") :]
    shown = shown[shown.index("targets (") : shown.index("```")]
    return [" ".join(x.split()) for x in shown.splitlines()[1:] if "built-in" in x]


def test_the_library_page_shows_the_targets_as_lab_list_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    listed = out[out.index("targets (") :].splitlines()[1:]
    built_in = [" ".join(x.split()) for x in listed if "built-in" in x]
    assert _page_s_lab_list_targets() == built_in


BROKEN_PACKAGE = {
    "METADATA": "Metadata-Version: 2.1\nName: broken-pkg\nVersion: 0.1\n",
    "entry_points.txt": "[lab.targets]\nbroken-broker = broken_pkg_missing.target:Broker\n",
}


def test_lab_list_shows_a_broken_entry_point_and_exits_2(tmp_path: Path) -> None:
    """An installed package whose target's module is missing: every other scenario and
    target is still listed, the broken one's line says why, and `lab list` ends with the
    one-line error of exit status 2."""
    from conftest import run_lab

    dist = tmp_path / "site" / "broken_pkg-0.1.dist-info"
    dist.mkdir(parents=True)
    for name, text in BROKEN_PACKAGE.items():
        (dist / name).write_text(text, encoding="utf-8")
    pythonpath = os.pathsep.join(filter(None, [str(dist.parent), os.environ.get("PYTHONPATH")]))
    result = run_lab("list", cwd=tmp_path, env={"PYTHONPATH": pythonpath})
    assert result.returncode == 2, result.stderr
    listed = result.stdout.splitlines()
    assert any(line.startswith("master-failure ") for line in listed)
    (broken,) = [line for line in listed if line.strip().startswith("broken-broker")]
    assert "cannot be loaded" in broken and "ModuleNotFoundError" in broken
    assert any(line.split()[:2] == ["broker_ref", "built-in"] for line in listed)
    errors = [line for line in result.stderr.splitlines() if line.startswith("lab: error:")]
    assert len(errors) == 1, result.stderr
    assert "lab.targets entry point 'broken-broker'" in errors[0]
    assert "entry point of broken-pkg 0.1 (broken_pkg_missing.target:Broker)" in errors[0]


def test_every_file_the_packages_read_is_installed_with_them() -> None:
    """A lab installed with pip (not from its checkout) has its data files too: each file
    of the packages that is not Python is named in pyproject.toml's package-data."""
    import fnmatch
    import tomllib

    root = Path(__file__).resolve().parent.parent
    declared = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    data: dict[str, list[str]] = declared.get("package-data", {})
    for package in ("lab", "broker_ref", "clients", "faults", "scenarios", "spark_reports"):
        for path in sorted((root / package).rglob("*")):
            if not path.is_file() or path.suffix in (".py", ".pyc"):
                continue
            folder = ".".join(path.parent.relative_to(root).parts)
            patterns = data.get(folder, [])
            assert any(fnmatch.fnmatch(path.name, p) for p in patterns), (
                f"{path.relative_to(root)} is not in [tool.setuptools.package-data] {folder!r}"
            )
