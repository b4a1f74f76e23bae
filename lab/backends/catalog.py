"""Choosing a target and a backend by name."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from lab.backends.process.cluster import ProcessCluster
from lab.ground.errors import UsageError
from lab.ground.events import Events
from lab.ground.spec import BACKENDS, TARGETS, Durability, GroupSettings, Topology
from lab.targets.broker_ref import BrokerRefTarget
from lab.targets.protocol import Target

if TYPE_CHECKING:
    from lab.backends.docker.cluster import DockerCluster

__all__ = ["Cluster", "make_cluster", "make_target"]

Cluster: TypeAlias = "ProcessCluster | DockerCluster"


def make_target(name: str) -> Target:
    if name == "broker_ref":
        return BrokerRefTarget()
    if name == "qpid-broker-j":
        from lab.targets.brokerj.target import BrokerJTarget

        return BrokerJTarget()
    raise UsageError(f"unknown target {name!r} (known: {', '.join(TARGETS)})")


def make_cluster(
    backend: str,
    target: str,
    topology: Topology,
    durability: Durability,
    work_dir: Path,
    *,
    events: Events | None = None,
    detached: bool = False,
    toxiproxy_port: int | None = None,
    group: GroupSettings | None = None,
) -> Cluster:
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    if topology.nodes < 1:
        raise UsageError("a cluster needs at least one node")
    cluster_type: type[ProcessCluster] | type[DockerCluster] = ProcessCluster
    if backend == "docker":
        # Imported here: the Docker SDK is needed only by those who ask for containers.
        from lab.backends.docker.cluster import DockerCluster

        cluster_type = DockerCluster
    return cluster_type(
        topology,
        durability,
        make_target(target),
        work_dir,
        events=events,
        detached=detached,
        toxiproxy_port=toxiproxy_port,
        group=group,
    )
