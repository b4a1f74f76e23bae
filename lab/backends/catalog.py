"""Choosing a backend by name: the cluster of a target's nodes, as local processes or containers."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from lab.backends.process.cluster import ProcessCluster
from lab.ground.errors import UsageError
from lab.ground.events import Events
from lab.ground.extras import DOCKER, require
from lab.ground.spec import BACKENDS, Durability, GroupSettings, Topology
from lab.targets.protocol import Target

if TYPE_CHECKING:
    from lab.backends.docker.cluster import DockerCluster

__all__ = ["Cluster", "make_cluster"]

Cluster: TypeAlias = "ProcessCluster | DockerCluster"


def make_cluster(
    backend: str,
    target: Target,
    topology: Topology,
    durability: Durability,
    work_dir: Path,
    *,
    events: Events | None = None,
    detached: bool = False,
    toxiproxy_port: int | None = None,
    group: GroupSettings | None = None,
    disk_mb: int | None = None,
) -> Cluster:
    """The cluster; `disk_mb`: size-limited node disks for a schedule that fills one (the
    process backend mounts them only then; containers always have them)."""
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    if topology.nodes < 1:
        raise UsageError("a cluster needs at least one node")
    cluster_type: type[ProcessCluster] | type[DockerCluster] = ProcessCluster
    if backend == "docker":
        require(DOCKER, "the Docker backend")
        # Imported here: the Docker SDK is needed only by those who ask for containers.
        from lab.backends.docker.cluster import DockerCluster

        cluster_type = DockerCluster
    return cluster_type(
        topology,
        durability,
        target,
        work_dir,
        events=events,
        detached=detached,
        toxiproxy_port=toxiproxy_port,
        group=group,
        disk_mb=disk_mb,
    )
