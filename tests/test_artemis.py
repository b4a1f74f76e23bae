"""Apache ActiveMQ Artemis as a real target: its JVMs started by the lab, each broker→broker
link through its pair's proxy, its states read through Jolokia.

The first test to need Artemis fetches its binary distribution with Maven (once, cached); a
machine without Maven or Java skips with that reason. In the default suite: what Artemis
cannot express refused before anything starts (no JVM), and one primary failure on local
JVMs. The rest is long (`--lab-long`): a cluster `lab up` leaves running, quorum voting (its
voters beside the pair: seven JVMs), a ZooKeeper lock manager, and containers.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from artemis_helpers import zookeeper

from lab.compose import parts_for
from lab.ground.errors import SetupError
from lab.pytest_plugin import skip_unless_ci
from lab.run.runner import RunOutcome, run_scenario
from lab.targets.artemis.distribution import ensure_distribution

pytestmark = [pytest.mark.artemis]


@pytest.fixture(scope="module")
def _artemis() -> None:
    for tool in ("java", "jcmd"):
        if shutil.which(tool) is None:
            skip_unless_ci(f"Artemis needs a JDK ({tool} is not on PATH)")
    try:
        ensure_distribution()
    except SetupError as exc:
        skip_unless_ci(f"Artemis could not be fetched: {exc}")


def _roles(folder: Path) -> list[tuple[str, str]]:
    """Each `node.role` the run recorded, in order: (node, role)."""
    found = []
    for line in (folder / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("kind") == "node.role":
            found.append((event["node"], event["role"]))
    return found


def _held_or_declared(outcome: RunOutcome, lab_deviation: Callable[[RunOutcome], str]) -> None:
    note = lab_deviation(outcome)  # a deviation Artemis declares ends the test as xfail
    assert outcome.check.acknowledged > 0, "the workload acknowledged nothing"
    assert outcome.check.lost.count == 0
    assert outcome.verdict.held, (
        f"{outcome.summary}\nrun folder: {outcome.folder.path}\nreproduce: {outcome.reproduce}"
        + (f"\n{note}" if note else "")
    )


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["rogue-promote"], "Artemis has no command that makes a backup active"),
        (["replicate-none"], "it has no per-queue replication"),
        (["master-failure"], "run it with --mode active-passive"),
        (["primary-failure", "--target-setting", "activation=vote"], "activation"),
    ],
)
def test_what_artemis_cannot_express_is_refused_before_anything_starts(
    lab: Callable[..., object], tmp_path: Path, argv: list[str], says: str
) -> None:
    done = lab(
        "run", *argv, "--target", "artemis", "--seed", "1", "--runs-dir", "runs", cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr  # type: ignore[attr-defined]
    lines = done.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert says in lines[-1] and lines[-1].startswith("lab: error:")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("spec.json"))


@pytest.mark.processes
def test_a_backup_takes_over_a_killed_primary_on_local_jvms(
    _artemis: None,
    lab_run: Callable[..., RunOutcome],
    lab_deviation: Callable[[RunOutcome], str],
) -> None:
    outcome = lab_run("primary-failure", backend="process", target="artemis")
    assert outcome.spec.group.active_passive.activation == "self"
    roles = _roles(outcome.folder.path)
    # the lab's cluster manager stayed out: Artemis's states came from Jolokia and its log
    assert ("n1", "MASTER") in roles
    assert any(node != "n1" and role == "MASTER" for node, role in roles)  # a backup took over
    events = (outcome.folder.path / "events.jsonl").read_text()
    assert '"kind":"manager.' not in events and '"code":"AMQ221007"' in events
    _held_or_declared(outcome, lab_deviation)


def _run(name: str, tmp_path: Path, backend: str = "process", **settings: str) -> RunOutcome:
    parts = parts_for(name, backend, "artemis")
    spec = parts.scenario.spec(11, backend=backend, target=parts.target)
    return run_scenario(spec.with_target_settings(settings), parts, tmp_path / "runs")


@pytest.mark.long
@pytest.mark.processes
def test_with_failback_the_restarted_primary_takes_over_again(
    _artemis: None, tmp_path: Path
) -> None:
    outcome = _run("primary-failure", tmp_path)
    roles = _roles(outcome.folder.path)
    kill = next(i for i, (node, role) in enumerate(roles) if node != "n1" and role == "MASTER")
    assert ("n1", "REPLICA") in roles[kill:], "the primary did not come back as a backup first"
    assert ("n1", "MASTER") in roles[kill:], "the primary did not take over again"
    assert outcome.check.lost.count == 0


@pytest.mark.long
@pytest.mark.processes
def test_quorum_voting_runs_its_voters_beside_the_pair(_artemis: None, tmp_path: Path) -> None:
    outcome = _run("primary-failure", tmp_path, activation="quorum-voting")
    assert outcome.check.lost.count == 0
    for voter in ("v1", "v2", "v3", "v4"):  # two more pairs: three primaries vote
        log = (outcome.folder.path / "nodes" / voter / "broker.log").read_text()
        assert "AMQ221001" in log or "AMQ221109" in log or "Backup Server" in log
    backups = [(outcome.folder.path / "nodes" / n / "broker.log").read_text() for n in ("n2", "n3")]
    assert any("AMQ221066: Initiating quorum vote" in log for log in backups)


@pytest.mark.long
@pytest.mark.processes
def test_a_zookeeper_lock_manager(_artemis: None, tmp_path: Path) -> None:
    with zookeeper(tmp_path / "zookeeper") as ensemble:
        outcome = _run(
            "primary-failure",
            tmp_path,
            **{"lock-manager": "zookeeper", "zookeeper": ensemble},
        )
    config = (outcome.folder.path / "nodes" / "n1" / "etc" / "broker.xml").read_text()
    assert "CuratorDistributedLockManager" in config and ensemble in config
    assert any(n != "n1" and r == "MASTER" for n, r in _roles(outcome.folder.path))
    assert outcome.check.lost.count == 0


@pytest.mark.long
@pytest.mark.docker
def test_a_backup_takes_over_a_killed_primary_in_containers(
    _artemis: None, lab_run: Callable[..., RunOutcome], lab_deviation: Callable[[RunOutcome], str]
) -> None:
    from lab.backends.docker.engine import can_install, engine_answers

    if not engine_answers() and not can_install():
        skip_unless_ci("no Docker engine answers, and the lab installs one only as root on Debian")
    outcome = lab_run("primary-failure", backend="docker", target="artemis")
    _held_or_declared(outcome, lab_deviation)
    etc = outcome.folder.path / "nodes" / "n2" / "etc" / "broker.xml"
    assert "/locks" in etc.read_text()  # the file lock in the run's shared folder


@pytest.mark.long
@pytest.mark.processes
def test_lab_up_reads_artemis_states_and_down_stops_it(
    _artemis: None, lab: Callable[..., object], tmp_path: Path
) -> None:
    up = lab("up", "--nodes", "2", "--target", "artemis", cwd=tmp_path, timeout=400)
    try:
        assert up.returncode == 0, up.stderr  # type: ignore[attr-defined]
        nodes = json.loads(up.stdout)["nodes"]  # type: ignore[attr-defined]
        assert [n["name"] for n in nodes] == ["n1", "n2"]
        status = lab("ha", "status", "--all", cwd=tmp_path)
        lines = status.stdout.splitlines()  # type: ignore[attr-defined]
        assert lines[0].startswith("n1 ") and lines[0].split()[-1] in ("active", "recovering")
        assert lines[1].startswith("n2 ") and lines[1].split()[-1] in ("ready", "joining")
        assert lab("ha", "status", "--expect", "primary", cwd=tmp_path).returncode == 0  # type: ignore[attr-defined]
        promote = lab("ha", "promote", "n2", "--cluster-manager", cwd=tmp_path)
        assert promote.returncode == 2 and "no promote" in promote.stderr  # type: ignore[attr-defined]
    finally:
        down = lab("down", cwd=tmp_path)
    assert down.returncode == 0, down.stderr  # type: ignore[attr-defined]
    assert "n1" in down.stderr and "n2" in down.stderr  # type: ignore[attr-defined]


def test_the_run_spec_records_how_artemis_decides() -> None:
    parts = parts_for("primary-failure", "process", "artemis")
    spec = parts.scenario.spec(1, target=parts.target)
    quorum = spec.with_target_settings({"activation": "quorum-voting"})
    assert quorum.to_json()["group"]["target_context"] == {
        "artemis": {"activation": "quorum-voting"}
    }
    assert replace(quorum, git_revision=None).group.active_passive.activation == "self"
