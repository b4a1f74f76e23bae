"""An active-passive backup whose link to the primary fails one way: the primary stops waiting
for it (it missed its heartbeats), so it is no longer ready until it has caught up again.

A Toxiproxy one-way partition blackholes what the backup sends the primary while the primary's
stream still reaches it: the primary gives up on the backup (REF-2010) and acknowledges without
it. A backup that went on calling itself ready would be promoted without what the primary
acknowledged since, and those messages would be lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from proton import Message
from proton.utils import BlockingConnection

from faults.nemesis import Nemesis
from lab.backends.catalog import make_cluster
from lab.backends.process.cluster import ProcessCluster
from lab.ground.faultops import FaultOp
from lab.ground.spec import Durability, Topology
from lab.targets.broker_ref import BrokerRefTarget
from scenarios.active_passive import CLUSTER

pytestmark = pytest.mark.processes


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ProcessCluster]:
    started = make_cluster(
        "process", BrokerRefTarget(), Topology(3), Durability(), tmp_path, group=CLUSTER
    )
    assert isinstance(started, ProcessCluster)
    try:
        started.start()
        yield started
    finally:
        started.stop()


def _until(condition: Callable[[], bool], timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _status(cluster: ProcessCluster, name: str) -> str:
    return str(cluster.management(name).ha()["status"])


def _depth(cluster: ProcessCluster, name: str) -> int:
    queues = cluster.management(name).node_attributes()["queues"]
    return int(queues.get("q", {}).get("depth", 0))


def _send(url: str, count: int) -> None:
    conn = BlockingConnection(url, timeout=10)
    try:
        sender = conn.create_sender("q")
        for i in range(count):
            sender.send(Message(id=f"m{i}", body=b"x" * 50, durable=True), timeout=10)
    finally:
        conn.close()


def test_a_backup_the_primary_gave_up_on_is_not_ready_until_it_caught_up_again(
    cluster: ProcessCluster,
) -> None:
    names = cluster.node_names
    assert _until(lambda: sum(_status(cluster, n) == "active" for n in names) == 1)
    primary = next(n for n in names if _status(cluster, n) == "active")
    backup = next(n for n in names if n != primary)
    assert _until(lambda: _status(cluster, backup) == "ready")
    op = FaultOp(0.0, "start", "one_way_partition", "group", "f1", {"sides": f"{backup}|{primary}"})
    with Nemesis(cluster) as nemesis:
        nemesis.apply(op)
        # Twice the 1 s link heartbeat without a word: the primary stops waiting for the backup,
        # and the backup, which still hears the primary, is no longer ready.
        assert _until(lambda: _status(cluster, backup) == "catchup")
        assert backup not in cluster.management(primary).ha()["readyBackups"]
        _send(cluster.client_urls()[names.index(primary)], 20)  # acknowledged without it
        assert _depth(cluster, backup) == 0
        nemesis.apply(FaultOp(0.0, "stop", "one_way_partition", "group", "f1", dict(op.params)))
    assert _until(lambda: _status(cluster, backup) == "ready")
    assert _until(lambda: _depth(cluster, backup) == 20)
    assert backup in cluster.management(primary).ha()["readyBackups"]
