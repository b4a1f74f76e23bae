"""Abilities of a target whose nodes need more of the lab than being started: processes beside
them for the run, and a last step once they run that makes them a group."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from lab.ground.errors import ClusterError
from lab.ground.nodes import ClusterPlan

__all__ = ["FormsGroup", "RunsLocalServices", "form_group"]


@runtime_checkable
class RunsLocalServices(Protocol):
    """A target whose nodes on local processes need processes beside them that the lab runs
    for the run (RabbitMQ: Erlang's port mapper, epmd, so that the run's nodes find each
    other and none of it outlives the run). The process backend gives each a port
    (ClusterPlan.services), starts them before the nodes and stops them after."""

    local_services: tuple[str, ...]

    def local_service(self, cluster: ClusterPlan, name: str) -> list[str]:
        """The command line of service `name` (its port: `cluster.services[name]`)."""
        ...


@runtime_checkable
class FormsGroup(Protocol):
    """A target whose nodes, once started, make a group only when the lab finishes forming it
    (RabbitMQ: the run's queue declared, of the run's queue type, once every node has joined
    the cluster). The backends ask it after starting the nodes, again and again until it is
    formed (or a node has ended, or the target's ready timeout passed), before they wait for
    a master."""

    def form_group(self, cluster: ClusterPlan) -> bool:
        """One try: True once the group is formed, False while it cannot be yet (not every
        node has joined); a ClusterError when it never can be."""
        ...


def form_group(
    target: FormsGroup, cluster: ClusterPlan, timeout_s: float, ended: Callable[[], str | None]
) -> None:
    """Ask `target` to form its group until it has; a ClusterError when a node has ended
    (`ended` says how) or `timeout_s` passed first."""
    deadline = time.monotonic() + timeout_s
    while not target.form_group(cluster):
        why = ended()
        if why is not None:
            raise ClusterError(why)
        if time.monotonic() > deadline:
            raise ClusterError(f"the group was not formed within {timeout_s:g} s")
        time.sleep(0.5)
