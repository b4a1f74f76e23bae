"""`wait_ready` above the backends: what a cluster waits for after the faults are healed,
with nodes that stand for brokers (no process). A target whose brokers activate themselves
may see its other brokers stop themselves (an Artemis backup that cannot pair): the one left
alone is a whole group, and the wait ends at once instead of at its deadline."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest

from lab.backends.base import ClusterBase
from lab.ground.errors import ClusterError
from lab.ground.nodes import NodeStatus
from lab.ground.spec import Topology
from lab.targets.artemis.target import ArtemisTarget
from scenarios.active_passive_self import SELF_CLUSTER


@dataclass
class _Node:
    plan: str
    running: bool = True
    paused: bool = False

    def exit_detail(self) -> str:
        return "exited with status 0"


class _Artemis(ArtemisTarget):
    def __init__(self, roles: dict[str, str]) -> None:
        super().__init__()
        self.roles = roles

    def status(self, node: object, timeout_s: float = 1.0) -> NodeStatus | None:
        return NodeStatus(name=str(node), role=self.roles[str(node)])


class _Cluster(ClusterBase[Any]):  # its nodes stand for brokers: no NodeHandle
    def __init__(self, roles: dict[str, str], stopped: set[str]) -> None:
        self.topology = Topology(nodes=len(roles))
        self.plan = None
        self.group = replace(SELF_CLUSTER)
        self.artemis = _Artemis(roles)
        self.target = self.artemis
        self.nodes = {n: _Node(n, running=n not in stopped) for n in roles}


def test_the_one_broker_left_after_the_others_stopped_themselves_is_ready_at_once() -> None:
    cluster = _Cluster({"n1": "WAITING", "n2": "WAITING", "n3": "MASTER"}, {"n1", "n2"})
    assert cluster.wait_ready(timeout_s=2.0) == "n3"


def test_two_brokers_left_wait_for_the_backup_in_sync() -> None:
    cluster = _Cluster({"n1": "WAITING", "n2": "WAITING", "n3": "MASTER"}, {"n1"})
    with pytest.raises(ClusterError, match=r"not ready within 0\.3 s"):
        cluster.wait_ready(timeout_s=0.3)
    cluster.artemis.roles["n2"] = "REPLICA"
    assert cluster.wait_ready(timeout_s=2.0) == "n3"
