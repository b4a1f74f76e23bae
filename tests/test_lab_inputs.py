"""Every input the lab reads, broken field by field as the manual (docs/) describes them,
gets a one-line error naming the input and the field, exit status 2, no traceback, and
nothing half-written: an edited run folder's spec.json (`lab replay`), an edited
result.json, the cluster state `lab down` reads, the environment variables the lab
reads. (Histories: tests/test_checker_input.py; incident files: tests/test_incident.py.)"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lab.cli.main import main
from scenarios.catalog import scenario_named


class _Missing:
    def __repr__(self) -> str:
        return "missing"


_MISSING = _Missing()


def _spec() -> dict[str, Any]:
    spec: dict[str, Any] = scenario_named("master-failure").spec(1).to_json()
    return spec


def _set(doc: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node: Any = out
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is _MISSING:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


def _lab(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    err = capsys.readouterr().err
    return code, err


def _one_line_error(code: int, err: str, *names: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("lab: error: "), err
    assert "Traceback" not in err
    for name in names:
        assert name in lines[0], f"{name!r} not named in: {lines[0]}"


SPEC_CASES = [
    ("scenario", 5, "scenario"),
    ("scenario", "nope", "nope"),
    ("scenario", _MISSING, "scenario"),
    ("seed", "x", "seed"),
    ("seed", -1, "seed"),
    ("target", "rabbit", "rabbit"),
    ("backend", "vm", "vm"),
    ("topology.nodes", 0, "nodes"),
    ("topology.nodes", "three", "nodes"),
    ("topology", _MISSING, "topology"),
    ("durability.master_sync", "SOMETIMES", "SOMETIMES"),
    ("durability.ack_policy", 7, "ack_policy"),
    ("durability.ack_policy", "SOME", "SOME"),
    ("durability.coalescing_sync", "yes", "coalescing_sync"),
    ("workload.rate", -1.0, "rate"),
    ("workload.duration_s", "long", "duration_s"),
    ("workload.producers", -2, "producers"),
    ("workload.size", 0, "size"),
    ("workload", _MISSING, "workload"),
    ("group.mode", "both", "both"),
    ("group.election_timeout_s", "soon", "election_timeout_s"),
    ("group.priority", {"n9": 1}, "n9"),
    ("schedule", "all", "schedule"),
    ("schedule.0.fault", "meteor", "meteor"),
    ("schedule.0.at_s", -1.0, "at_s"),
    ("schedule.0.target", "n9", "n9"),
    ("schedule.0.action", "explode", "explode"),
    ("schedule.0.id", 3, "id"),
    ("v", 99, "99"),
]


@pytest.mark.parametrize(
    ("path", "value", "named"), SPEC_CASES, ids=[f"{p}={v!r}" for p, v, _ in SPEC_CASES]
)
def test_an_edited_spec_is_refused_in_one_line_naming_the_field(
    path: str, value: object, named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "runs" / "master-failure" / "20260101T000000Z-1"
    folder.mkdir(parents=True)
    (folder / "spec.json").write_text(json.dumps(_set(_spec(), path, value)), encoding="utf-8")
    replays = tmp_path / "replays"
    code, err = _lab(["replay", str(folder), "--runs-dir", str(replays)], capsys)
    _one_line_error(code, err, "spec.json", named)
    assert not replays.exists() or not any(replays.rglob("spec.json"))  # nothing started


def test_a_spec_that_is_not_json_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "spec.json").write_text('{"scenario": "master-failure", ', encoding="utf-8")
    code, err = _lab(["replay", str(folder), "--runs-dir", str(tmp_path / "r")], capsys)
    _one_line_error(code, err, "spec.json")


@pytest.mark.parametrize("state", ["{not json", '{"backend": 5}', "[]"])
def test_a_broken_cluster_state_is_named_by_lab_down(
    state: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".lab").mkdir()
    (tmp_path / ".lab" / "cluster.json").write_text(state, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, err = _lab(["down"], capsys)
    _one_line_error(code, err, "cluster.json")


@pytest.mark.parametrize(
    ("variable", "value", "argv"),
    [
        ("DOCKER_HOST", "nonsense://", ["up", "--backend", "docker"]),
        ("LAB_CACHE", "/dev/null/cache", ["up", "--target", "qpid-broker-j"]),
    ],
)
def test_a_bad_environment_variable_is_named(
    variable: str,
    value: str,
    argv: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(variable, value)
    monkeypatch.chdir(tmp_path)
    code, err = _lab(argv, capsys)
    _one_line_error(code, err, variable)
    assert not (tmp_path / ".lab" / "cluster.json").exists()
