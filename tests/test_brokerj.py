"""Apache Qpid Broker-J as a real target: its JVMs started by the lab, on both backends.

The first test to need Broker-J fetches its binary distribution with Maven (once,
cached); a machine without Maven or Java skips with that reason.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.backends.catalog import make_cluster
from lab.backends.process.cluster import ProcessCluster
from lab.ground.errors import ClusterError, SetupError
from lab.ground.spec import Durability, GroupSettings, Topology
from lab.pytest_plugin import skip_unless_ci
from lab.run.runner import RunOutcome
from lab.targets.brokerj.distribution import ensure_distribution
from lab.targets.catalog import make_target

pytestmark = [pytest.mark.brokerj]


class _Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, dict[str, object]]] = []

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        self.seen.append((kind, node, fields))


@pytest.fixture(scope="module", autouse=True)
def _broker_j() -> None:
    for tool in ("java", "jcmd"):
        if shutil.which(tool) is None:
            skip_unless_ci(f"Broker-J needs a JDK ({tool} is not on PATH)")
    try:
        ensure_distribution()
    except SetupError as exc:
        skip_unless_ci(f"Broker-J could not be fetched: {exc}")


def _assert_held(outcome: RunOutcome) -> None:
    assert outcome.spec.target == "qpid-broker-j"
    assert outcome.check.acknowledged > 0, "the workload acknowledged nothing"
    assert outcome.verdict.held, (
        f"{outcome.summary}\nrun folder: {outcome.folder.path}\nreproduce: {outcome.reproduce}"
    )


@pytest.mark.processes
def test_master_failure_holds_on_local_jvms(lab_run: Callable[..., RunOutcome]) -> None:
    outcome = lab_run("master-failure", backend="process", target="qpid-broker-j")
    _assert_held(outcome)
    events = (outcome.folder.path / "events.jsonl").read_text()
    # Broker-J's own operational log became events: its role changes and its recovery.
    assert '"kind":"node.role"' in events and '"code":"MST-1006"' in events


@pytest.mark.docker
def test_master_failure_holds_in_containers(lab_run: Callable[..., RunOutcome]) -> None:
    from lab.backends.docker.engine import can_install, engine_answers

    if not engine_answers() and not can_install():
        skip_unless_ci("no Docker engine answers, and the lab installs one only as root on Debian")
    _assert_held(lab_run("master-failure", backend="docker", target="qpid-broker-j"))


@pytest.fixture
def one_node(tmp_path: Path) -> Iterator[tuple[ProcessCluster, _Events]]:
    events = _Events()
    cluster = make_cluster(
        "process",
        make_target("qpid-broker-j"),
        Topology(nodes=1),
        Durability(),
        tmp_path,
        events=events,
    )
    assert isinstance(cluster, ProcessCluster)
    try:
        cluster.start()
        yield cluster, events
    finally:
        cluster.stop()


@pytest.mark.processes
def test_a_full_gc_runs_in_the_nodes_jvm(one_node: tuple[ProcessCluster, _Events]) -> None:
    cluster, events = one_node
    cluster.full_gc("n1")
    (gc,) = [fields for kind, node, fields in events.seen if kind == "node.gc" and node == "n1"]
    assert gc["output"] == "Command executed successfully"
    cluster.pause("n1")
    try:
        with pytest.raises(ClusterError, match="not running"):
            cluster.full_gc("n1")
    finally:
        cluster.resume("n1")


@pytest.mark.processes
def test_management_changes_a_node_attribute_and_refuses_a_bad_password(
    one_node: tuple[ProcessCluster, _Events],
) -> None:
    cluster, _ = one_node
    management = cluster.management("n1")
    assert management.node_attributes()["role"] == "MASTER"
    management.set_attributes(priority=3)
    assert management.node_attributes()["priority"] == 3
    from lab.targets.management import Credentials, ManagementClient, ManagementRefused

    intruder = ManagementClient(management.base_url, "n1", Credentials("admin", "wrong"))
    with pytest.raises(ManagementRefused) as refused:
        intruder.set_attributes(priority=0)
    assert refused.value.status == 401
    assert management.node_attributes()["priority"] == 3


@pytest.mark.processes
def test_node_links_cannot_be_cut_on_local_jvms(tmp_path: Path) -> None:
    cluster = make_cluster(
        "process",
        make_target("qpid-broker-j"),
        Topology(nodes=2),
        Durability(),
        tmp_path,
        group=GroupSettings(designated_primary=("n1",)),
    )
    with pytest.raises(ClusterError, match="cut only on the Docker backend"):
        cluster.set_link("n1_to_n2", False)


@pytest.mark.processes
@pytest.mark.parametrize(
    ("scenario", "backend", "says"),
    [
        ("replica-gc-stall-all", "process", "fixes the replica acknowledgement policy"),
        ("partition-and-recovery", "process", "cut only on the Docker backend"),
        ("durability-matrix", "docker", "no proxy can slow them"),
    ],
)
def test_a_scenario_broker_j_cannot_run_is_refused_in_one_line(
    scenario: str,
    backend: str,
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from lab.cli.main import main

    argv = ["run", scenario, "--target", "qpid-broker-j", "--backend", backend, "--seed", "1"]
    assert main([*argv, "--runs-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert says in err[-1] and err[-1].startswith("lab: error:")


@pytest.mark.docker
def test_a_node_link_is_cut_in_the_nodes_and_a_full_gc_runs_in_containers(tmp_path: Path) -> None:
    from lab.backends.docker.cluster import DockerCluster
    from lab.backends.docker.engine import can_install, engine_answers

    if not engine_answers() and not can_install():
        skip_unless_ci("no Docker engine answers, and the lab installs one only as root on Debian")
    from lab.backends.docker import node_filter

    events = _Events()
    cluster = make_cluster(
        "docker",
        make_target("qpid-broker-j"),
        Topology(nodes=2),
        Durability(),
        tmp_path,
        events=events,
        group=GroupSettings(designated_primary=("n1",)),
    )
    assert isinstance(cluster, DockerCluster)
    try:
        cluster.start()
        assert cluster.subnet is not None
        pid = cluster.node("n1").pid
        assert pid is not None
        peer = cluster.subnet.node(1)
        assert not node_filter.is_blocked(pid, peer)
        cluster.set_link("n1_to_n2", False)
        cluster.set_link("n1_to_n2", False)  # idempotent
        assert node_filter.is_blocked(pid, peer)
        with pytest.raises(ClusterError, match="no proxy can slow them"):
            cluster.require_proxy("n1_to_n2")  # latency and the like need a proxy
        cluster.set_link("n1_to_n2", True)
        cluster.set_link("n1_to_n2", True)
        assert not node_filter.is_blocked(pid, peer)
        filtered = [f for k, _, f in events.seen if k == "link.filter"]
        assert [f["enabled"] for f in filtered] == [False, False, True, True]
        cluster.full_gc("n2")  # docker exec … jcmd in the container
        (gc,) = [f for k, n, f in events.seen if k == "node.gc" and n == "n2"]
        assert gc["output"] == "Command executed successfully"
    finally:
        cluster.stop()
