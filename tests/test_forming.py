"""A target that runs processes beside its nodes and forms its group itself (RabbitMQ: its
port mapper; its queue declared once every node joined), on local processes: the service gets
a port in the plan, runs before the nodes and ends after them; the founder boots alone until
the target says it is ready, and the group is formed once every node runs. Real Toxiproxy,
idle nodes (NoTarget's)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lab.backends.process.cluster import ProcessCluster
from lab.ground.children import process_alive
from lab.ground.errors import ClusterError
from lab.ground.nodes import ClusterPlan, NodePlan, NodeStatus
from lab.ground.spec import Durability, Topology
from lab.targets.forming import FormsGroup, RunsLocalServices
from lab.targets.protocol import NoTarget

pytestmark = [pytest.mark.processes]


class Forming(NoTarget):
    """Idle nodes, a service beside them, a founder, and a group formed by the target."""

    local_services = ("beside",)
    founded_by_first_node = True

    def __init__(self, cluster_of: list[ProcessCluster], forms: bool = True) -> None:
        self.cluster_of = cluster_of
        self.forms = forms
        self.seen: list[tuple[str, tuple[str, ...]]] = []  # (step, nodes running then)

    def _running(self) -> tuple[str, ...]:
        return tuple(sorted(n for n, node in self.cluster_of[0].nodes.items() if node.running))

    def local_service(self, cluster: ClusterPlan, name: str) -> list[str]:
        port = cluster.services[name]
        return [sys.executable, "-c", "import time, sys; time.sleep(3600)", str(port)]

    def founded(self, cluster: ClusterPlan) -> bool:
        self.seen.append(("founded", self._running()))
        return True

    def form_group(self, cluster: ClusterPlan) -> bool:
        self.seen.append(("form", self._running()))
        if not self.forms:
            raise ClusterError("this group never forms")
        return len([s for s in self.seen if s[0] == "form"]) >= 2  # the second try forms it

    def status(self, node: NodePlan, timeout_s: float = 1.0) -> NodeStatus | None:
        return NodeStatus(node.name, "MASTER" if node.name == "n1" else "REPLICA")


def test_the_service_runs_beside_the_nodes_and_the_group_is_formed_once_all_run(
    tmp_path: Path,
) -> None:
    made: list[ProcessCluster] = []
    target = Forming(made)
    assert isinstance(target, RunsLocalServices) and isinstance(target, FormsGroup)
    cluster = ProcessCluster(Topology(nodes=3), Durability(), target, tmp_path)
    made.append(cluster)
    try:
        assert cluster.start(timeout_s=60) == "n1"
        assert cluster.plan is not None
        port = cluster.plan.services["beside"]
        service = cluster.pids()["beside"]
        assert process_alive(service)
        assert str(port) in Path(f"/proc/{service}/cmdline").read_text()
        assert target.seen == [
            ("founded", ("n1",)),  # the founder alone
            ("form", ("n1", "n2", "n3")),
            ("form", ("n1", "n2", "n3")),
        ]
    finally:
        cluster.stop()
    assert not process_alive(service)
    assert cluster.services == {}


def test_a_group_that_cannot_form_stops_everything_with_the_reason(tmp_path: Path) -> None:
    made: list[ProcessCluster] = []
    cluster = ProcessCluster(Topology(nodes=2), Durability(), Forming(made, False), tmp_path)
    made.append(cluster)
    with pytest.raises(ClusterError, match="this group never forms"):
        cluster.start(timeout_s=60)
    assert not any(node.running for node in cluster.nodes.values())
    assert cluster.services == {}
