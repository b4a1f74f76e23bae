"""Apache Qpid Broker-J as a real target: its JVMs started by the lab, on both backends.

The first test to need Broker-J fetches its binary distribution with Maven (once,
cached); a machine without Maven or Java skips with that reason.
"""

from __future__ import annotations

import shutil
import subprocess
import time
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


# Long: Broker-J in containers stays in the default suite through its compose profile and the
# node-link cut in containers.
@pytest.mark.long
@pytest.mark.docker
def test_master_failure_holds_in_containers(
    lab_run: Callable[..., RunOutcome], lab_deviation: Callable[[RunOutcome], str]
) -> None:
    from lab.backends.docker.engine import can_install, engine_answers

    if not engine_answers() and not can_install():
        skip_unless_ci("no Docker engine answers, and the lab installs one only as root on Debian")
    outcome = lab_run("master-failure", backend="docker", target="qpid-broker-j")
    lab_deviation(outcome)  # J1's rolled-back master, when the kill leaves one, is an xfail
    _assert_held(outcome)


def _broker_j_cluster(
    backend: str,
    tmp_path: Path,
    nodes: int,
    events: _Events | None = None,
    designated: bool = False,
) -> Any:
    """A Broker-J cluster, not started (n1 designated primary when `designated`)."""
    group = GroupSettings(designated_primary=("n1",)) if designated else GroupSettings()
    target = make_target("qpid-broker-j")
    return make_cluster(
        backend, target, Topology(nodes=nodes), Durability(), tmp_path, events=events, group=group
    )


@pytest.fixture
def one_node(tmp_path: Path) -> Iterator[tuple[ProcessCluster, _Events]]:
    events = _Events()
    cluster = _broker_j_cluster("process", tmp_path, 1, events)
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
def test_management_reads_the_sync_policy_changes_an_attribute_and_refuses_a_bad_password(
    one_node: tuple[ProcessCluster, _Events],
) -> None:
    import requests

    cluster, _ = one_node
    management = cluster.management("n1")
    assert management.node_attributes()["role"] == "MASTER"
    # The default durability (NO_SYNC,NO_SYNC,SIMPLE_MAJORITY with coalescing-sync) is local
    # policy SYNC on 9.x, carried out by Broker-J's coalescing committer: it says so.
    reply = requests.get(
        f"{management.base_url}/api/latest/virtualhost/n1", auth=("admin", "admin"), timeout=30
    )
    (virtualhost,) = reply.json()
    assert virtualhost["coalescingSync"] is True
    assert virtualhost["localTransactionSynchronizationPolicy"] == "SYNC"
    management.set_attributes(priority=3)
    assert management.node_attributes()["priority"] == 3
    from lab.targets.management import Credentials, ManagementClient, ManagementRefused

    intruder = ManagementClient(management.base_url, "n1", Credentials("admin", "wrong"))
    with pytest.raises(ManagementRefused) as refused:
        intruder.set_attributes(priority=0)
    assert refused.value.status == 401
    assert management.node_attributes()["priority"] == 3


@pytest.mark.processes
def test_node_links_cannot_be_cut_on_local_jvms_without_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lab.backends.process import cluster as process_cluster
    from lab.backends.process.peer_filter import NOT_ROOT

    monkeypatch.setattr(process_cluster, "peer_filter_refusal", lambda: NOT_ROOT)
    cluster = _broker_j_cluster("process", tmp_path, 2, designated=True)
    with pytest.raises(ClusterError, match="cut only as root"):
        cluster.set_link("n1_to_n2", False)


def _wait_for_log(events: _Events, node: str, code: str, text: str, after: int) -> int:
    """The index of the first `broker.log` event from `node` past `after` with `code` whose
    text holds `text`; fails after 60 s without one."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for index, (kind, source, fields) in enumerate(events.seen[after:], start=after):
            if (kind, source, fields.get("code")) == ("broker.log", node, code) and text in str(
                fields.get("text")
            ):
                return index
        time.sleep(0.2)
    raise AssertionError(f"no {code} {text!r} from {node} within 60 s")


@pytest.mark.processes
def test_a_node_link_is_cut_between_local_jvms_at_their_own_addresses(tmp_path: Path) -> None:
    from lab.backends.process.peer_filter import peer_filter_refusal

    refusal = peer_filter_refusal()
    if refusal is not None:
        pytest.skip(f"node links between local JVMs: {refusal}")
    events = _Events()
    cluster = _broker_j_cluster("process", tmp_path, 2, events, designated=True)
    assert isinstance(cluster, ProcessCluster)
    try:
        cluster.start()
        assert cluster.plan is not None and cluster.peer_filter is not None
        hosts = [plan.replication_host for plan in cluster.plan.nodes]
        assert all(h.startswith("127.77.") for h in hosts) and len(set(hosts)) == 2
        joined = _wait_for_log(events, "n1", "HA-1010", f"({hosts[1]}:", 0)  # n2 at its address
        cluster.set_link("n1_to_n2", False)
        assert cluster.peer_filter.is_cut("n1", "n2")
        left = _wait_for_log(events, "n1", "HA-1006", "'n2'", joined)  # JE lost n2
        cluster.set_link("n1_to_n2", True)
        assert not cluster.peer_filter.is_cut("n1", "n2")
        _wait_for_log(events, "n1", "HA-1005", "'n2'", left)  # and n2 joined again
        filtered = [f["enabled"] for k, _, f in events.seen if k == "link.filter"]
        assert filtered == [False, True]
    finally:
        cluster.stop()
    rules = subprocess.run(["iptables", "-w", "-t", "raw", "-S"], capture_output=True, text=True)
    assert cluster.peer_filter.label not in rules.stdout
    assert not cluster.peer_filter.base.exists()


@pytest.mark.processes
@pytest.mark.parametrize(
    ("scenario", "backend", "says"),
    [
        ("replica-gc-stall-all", "process", "fixes the replica acknowledgement policy"),
        ("partition-and-recovery", "process", "cut only as root"),
        ("durability-matrix", "docker", "no proxy can slow them"),
    ],
)
def test_a_scenario_broker_j_cannot_run_is_refused_in_one_line(
    scenario: str,
    backend: str,
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lab.backends.process import cluster as process_cluster
    from lab.backends.process.peer_filter import NOT_ROOT
    from lab.cli.main import main

    monkeypatch.setattr(process_cluster, "peer_filter_refusal", lambda: NOT_ROOT)  # as non-root
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
    cluster = _broker_j_cluster("docker", tmp_path, 2, events, designated=True)
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
