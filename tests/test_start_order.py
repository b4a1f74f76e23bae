"""The order a backend starts a group's nodes in (lab.backends.base._start_in_order)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.backends.base import ClusterBase
from lab.ground.errors import ClusterError
from lab.ground.nodes import ClusterPlan, NodePlan, NodeStatus
from lab.ground.spec import Durability, GroupSettings


class _Node:
    def __init__(self, plan: NodePlan, log: list[str], dies: bool = False) -> None:
        self.plan = plan
        self.paused = False
        self.started = False
        self._log = log
        self._dies = dies

    @property
    def running(self) -> bool:
        return self.started and not self._dies

    def start(self) -> None:
        self.started = True
        self._log.append(f"start {self.plan.name}")

    def exit_detail(self) -> str:
        return "exited with status 1"


class _Target:
    """Reports the first node MASTER after it was asked `polls` times."""

    ready_timeout_s = 2.0

    def __init__(self, founded: bool, log: list[str], polls: int = 3) -> None:
        self.founded_by_first_node = founded
        self._log = log
        self._polls = polls

    def status(self, node: NodePlan, timeout_s: float = 1.0) -> NodeStatus | None:
        self._log.append(f"status {node.name}")
        self._polls -= 1
        return NodeStatus(node.name, "MASTER") if self._polls <= 0 else None


class _Cluster(ClusterBase[_Node]):
    def __init__(self, target: _Target, tmp: Path) -> None:
        self.target = target  # type: ignore[assignment]
        self.group = GroupSettings()
        self.nodes = {}
        self.plan = ClusterPlan(
            group="lab",
            nodes=tuple(
                NodePlan(n, 1, 2, 3, tmp / n / "data", tmp / n) for n in ("n1", "n2", "n3")
            ),
            durability=Durability.parse("NO_SYNC,NO_SYNC,SIMPLE_MAJORITY"),
        )


def test_a_group_that_grows_from_its_first_node_starts_the_others_once_it_is_master(
    tmp_path: Path,
) -> None:
    log: list[str] = []
    cluster = _Cluster(_Target(founded=True, log=log), tmp_path)
    cluster._start_in_order(lambda plan: _Node(plan, log))
    assert log == ["start n1", "status n1", "status n1", "status n1", "start n2", "start n3"]
    assert all(node.started for node in cluster.nodes.values())


def test_a_group_that_elects_together_starts_all_at_once(tmp_path: Path) -> None:
    log: list[str] = []
    cluster = _Cluster(_Target(founded=False, log=log), tmp_path)
    cluster._start_in_order(lambda plan: _Node(plan, log))
    assert log == ["start n1", "start n2", "start n3"]


def test_a_founder_that_ends_stops_the_start_with_its_exit(tmp_path: Path) -> None:
    log: list[str] = []
    cluster = _Cluster(_Target(founded=True, log=log, polls=99), tmp_path)
    with pytest.raises(ClusterError, match="node n1 exited with status 1"):
        cluster._start_in_order(lambda plan: _Node(plan, log, dies=plan.name == "n1"))
    assert list(cluster.nodes) == ["n1"]  # reachable by stop(); the others never started


def test_a_founder_that_never_becomes_master_is_a_clear_error(tmp_path: Path) -> None:
    target = _Target(founded=True, log=[], polls=10**6)
    target.ready_timeout_s = 0.3
    cluster = _Cluster(target, tmp_path)
    with pytest.raises(ClusterError, match=r"not ready within 0.3 s: \{'n1': 'no answer'\}"):
        cluster._start_in_order(lambda plan: _Node(plan, []))
