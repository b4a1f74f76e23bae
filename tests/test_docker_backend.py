"""The Docker backend: a 1-node cluster in containers, its faults, docker-compose, cleanup.

Skipped with a reason where no Docker engine answers and the lab may not set one up
(it installs docker.io itself only as root on Debian). Every cluster here carries this
worker's own `lab.session` label, and the module ends by asserting that nothing with
that label is left: no container, network or volume.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_lab
from proton import ProtonException
from proton.utils import BlockingConnection

from faults.catalog import fault_for
from lab.backends.docker.cluster import DockerCluster
from lab.backends.docker.engine import can_install, engine_answers, ensure_engine
from lab.backends.docker.images import build_images
from lab.backends.docker.labels import DETACHED, OWNER, RUN, SESSION, Owner
from lab.backends.docker.reaper import leftovers, reap
from lab.bench.probe import send_one
from lab.ground.faultops import FaultOp
from lab.ground.spec import Durability, Topology
from lab.pytest_plugin import skip_unless_ci
from lab.targets.broker_ref import BrokerRefTarget

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module", autouse=True)
def _an_engine_answers() -> None:
    if not engine_answers() and not can_install():
        skip_unless_ci(
            "no Docker engine answers (DOCKER_HOST or /var/run/docker.sock), and the lab installs "
            "one itself only as root on Debian: install Docker to run these tests"
        )


# One label per test worker (pytest-xdist runs this module in several processes).
SESSION_LABEL = f"test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{uuid.uuid4().hex[:8]}"


class RecordedEvents:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, dict[str, Any]]] = []

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        self.seen.append((kind, node, fields))

    def kinds(self) -> list[str]:
        return [kind for kind, _, _ in self.seen]


def _say(line: str) -> None:
    print(f"docker: {line}")


def _receive_one(url: str, queue: str, timeout_s: float = 10.0) -> str:
    conn = BlockingConnection(url, timeout=timeout_s)
    try:
        receiver = conn.create_receiver(queue)
        message = receiver.receive(timeout=timeout_s)
        receiver.accept()
        return str(message.id)
    finally:
        conn.close()


def _queue() -> str:
    return f"q-{uuid.uuid4().hex[:8]}"


def _op(fault: str, target: str) -> FaultOp:
    return FaultOp(at_s=0.0, action="start", fault=fault, target=target, id=f"f-{fault}")


@pytest.fixture(scope="module")
def engine() -> Iterator[Any]:
    client = ensure_engine(_say)
    build_images(_say)
    yield client
    reap(client)
    left = leftovers(client, f"{SESSION}={SESSION_LABEL}")
    client.close()
    assert left.empty, f"left behind by this test worker: {left}"


@pytest.fixture(scope="module")
def events() -> RecordedEvents:
    return RecordedEvents()


@pytest.fixture(scope="module")
def cluster(
    engine: Any, events: RecordedEvents, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DockerCluster]:
    work_dir = tmp_path_factory.mktemp("docker-cluster")
    started = DockerCluster(
        Topology(nodes=1),
        Durability(),
        BrokerRefTarget(),
        work_dir,
        events=events,
        session=SESSION_LABEL,
        say=_say,
    )
    started.start(timeout_s=60.0)
    yield started
    started.stop()
    assert leftovers(engine, f"{RUN}={started.run_id}").empty


def test_send_and_receive_through_the_client_proxy(
    cluster: DockerCluster, events: RecordedEvents
) -> None:
    queue = _queue()
    [url] = cluster.client_urls()
    assert url.startswith("amqp://127.0.0.1:")
    sent = send_one(url, queue=queue)
    assert _receive_one(url, queue) == sent
    assert ("node.role", "n1", {"role": "MASTER", "previous": "WAITING"}) in events.seen
    assert "broker.log" in events.kinds()
    log = (cluster.work_dir / "nodes" / "n1" / "broker.log").read_text(encoding="utf-8")
    assert "BRK-1004" in log


def test_kill_and_restart_keep_an_acknowledged_message(cluster: DockerCluster) -> None:
    queue = _queue()
    [url] = cluster.client_urls()
    sent = send_one(url, queue=queue)
    cluster.kill("n1")
    assert cluster.statuses() == {"n1": None}
    cluster.restart("n1")
    assert cluster.wait_ready(timeout_s=30.0) == "n1"
    assert _receive_one(url, queue) == sent


def test_pause_and_resume(cluster: DockerCluster, events: RecordedEvents) -> None:
    [url] = cluster.client_urls()
    fault = fault_for("pause")
    fault.apply(cluster, _op("pause", "n1"))
    try:
        assert cluster.statuses() == {"n1": None}
        with pytest.raises(ProtonException):
            send_one(url, queue=_queue(), timeout_s=1.5)
    finally:
        fault.heal(cluster, _op("pause", "n1"))
        fault.heal(cluster, _op("pause", "n1"))
    assert cluster.wait_ready(timeout_s=30.0) == "n1"
    send_one(url, queue=_queue())
    assert {"node.pause", "node.resume"} <= set(events.kinds())


def test_a_cut_client_link_refuses_then_heals(cluster: DockerCluster) -> None:
    [url] = cluster.client_urls()
    cut = fault_for("cut")
    cut.apply(cluster, _op("cut", "client_to_n1"))
    try:
        with pytest.raises(ProtonException):
            send_one(url, queue=_queue(), timeout_s=1.5)
    finally:
        cut.heal(cluster, _op("cut", "client_to_n1"))
        cut.heal(cluster, _op("cut", "client_to_n1"))
    send_one(url, queue=_queue())


def test_the_node_config_with_its_secret_is_readable_by_root_only(cluster: DockerCluster) -> None:
    container = cluster.nodes["n1"].container
    assert container is not None
    code, out = container.exec_run(["stat", "-c", "%a %U", "/etc/lab/node.json"])
    assert (code, out.decode().strip()) == (0, "600 root")


def test_disk_fill_reaches_enospc_and_free_returns_the_space(cluster: DockerCluster) -> None:
    before = cluster.disk_free_bytes("n1")
    assert before > 32 * 1024 * 1024
    fill = fault_for("disk_fill")
    fill.apply(cluster, _op("disk_fill", "n1"))
    try:
        assert cluster.disk_free_bytes("n1") < 64 * 1024
    finally:
        fill.heal(cluster, _op("disk_fill", "n1"))
        fill.heal(cluster, _op("disk_fill", "n1"))
    assert cluster.disk_free_bytes("n1") >= before - 1024 * 1024
    [url] = cluster.client_urls()
    queue = _queue()
    sent = send_one(url, queue=queue)
    assert _receive_one(url, queue) == sent


def test_disconnect_cuts_the_node_off_its_network_until_healed(cluster: DockerCluster) -> None:
    [url] = cluster.client_urls()
    fault = fault_for("disconnect")
    fault.apply(cluster, _op("disconnect", "n1"))
    try:
        with pytest.raises(ProtonException):
            send_one(url, queue=_queue(), timeout_s=1.5)
        assert cluster.statuses()["n1"] is not None  # its management API stays reachable
    finally:
        fault.heal(cluster, _op("disconnect", "n1"))
        fault.heal(cluster, _op("disconnect", "n1"))
    send_one(url, queue=_queue())


def test_process_only_faults_are_refused_by_name() -> None:
    from lab.ground.errors import ClusterError

    with pytest.raises(ClusterError, match="docker"):
        fault_for("disk_fill").apply(object(), _op("disk_fill", "n1"))


def test_reaper_removes_runs_whose_owner_died(engine: Any) -> None:
    dead = Owner.this_process()
    dead = Owner(dead.host, dead.pid, "0")  # this pid, but not this process's start time
    run_id = f"dead{uuid.uuid4().hex[:6]}"
    labels = {RUN: run_id, OWNER: dead.label(), DETACHED: "0", SESSION: SESSION_LABEL}
    engine.networks.create(f"lab-{run_id}-net", labels=labels, internal=True)
    engine.volumes.create(f"lab-{run_id}-n1-data", labels=labels)
    assert not leftovers(engine, f"{RUN}={run_id}").empty
    assert run_id in reap(engine).removed
    assert leftovers(engine, f"{RUN}={run_id}").empty


def test_lab_up_and_down_with_the_docker_backend(tmp_path: Path, engine: Any) -> None:
    up = run_lab("up", "--backend", "docker", cwd=tmp_path, timeout=300)
    state = tmp_path / ".lab" / "cluster.json"
    try:
        assert up.returncode == 0, up.stderr
        [node] = json.loads(up.stdout)["nodes"]
        queue = _queue()
        sent = send_one(node["amqp"], queue=queue)
        assert _receive_one(node["amqp"], queue) == sent
        run_id = json.loads(state.read_text())["docker_run"]
    finally:
        down = run_lab("down", cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert "n1" in down.stderr and "toxiproxy" in down.stderr
    assert not state.exists()
    assert leftovers(engine, f"{RUN}={run_id}").empty
    assert "BRK-1004" in (tmp_path / ".lab" / "cluster" / "nodes" / "n1" / "broker.log").read_text()
