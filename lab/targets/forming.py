"""Abilities of a target whose nodes need more of the lab than being started: processes beside
them for the run, and a last step once they run that makes them a group."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from lab.ground.errors import ClusterError
from lab.ground.nodes import ClusterPlan

__all__ = ["FormsGroup", "RunsLocalServices", "form_group", "wait_formed", "wait_founded"]


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

    def founded(self, cluster: ClusterPlan) -> bool:
        """One look, for a target whose group grows from its first node
        (`founded_by_first_node`): True once the founder is ready for the others to join."""
        ...

    def form_group(self, cluster: ClusterPlan) -> bool:
        """One try: True once the group is formed, False while it cannot be yet (not every
        node has joined); a ClusterError when it never can be."""
        ...


def form_group(
    step: Callable[[], bool], what: str, timeout_s: float, ended: Callable[[], str | None]
) -> None:
    """Try `step` (FormsGroup.founded or form_group) until it succeeds; a ClusterError when a
    node has ended first (`ended` says how) or `timeout_s` passed (`what` was not done)."""
    deadline = time.monotonic() + timeout_s
    while not step():
        why = ended()
        if why is not None:
            raise ClusterError(why)
        if time.monotonic() > deadline:
            raise ClusterError(f"{what} within {timeout_s:g} s")
        time.sleep(0.5)


Ended = Callable[[], str | None]  # how a node of the group ended, when one has


def wait_founded(
    target: object, cluster: ClusterPlan, ended: Ended, otherwise: Callable[[], object]
) -> None:
    """Until the founder of a FormsGroup target is ready (its own say), else `otherwise()`
    (a group of one that is ready: its master elected)."""
    if not isinstance(target, FormsGroup):
        otherwise()
        return
    timeout_s = float(getattr(target, "ready_timeout_s", 60.0))
    step = functools.partial(target.founded, cluster)
    form_group(step, "the founder was not ready", timeout_s, ended)


def wait_formed(target: object, cluster: ClusterPlan, ended: Ended) -> None:
    """Form a FormsGroup target's group once its nodes run; nothing for any other target."""
    if isinstance(target, FormsGroup):
        timeout_s = float(getattr(target, "ready_timeout_s", 60.0))
        step = functools.partial(target.form_group, cluster)
        form_group(step, "the group was not formed", timeout_s, ended)
