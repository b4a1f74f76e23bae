"""Choosing a target and a backend by name."""

from __future__ import annotations

from pathlib import Path

from lab.broker_ref_target import BrokerRefTarget
from lab.errors import UsageError
from lab.events import Events
from lab.process_backend import ProcessCluster
from lab.spec import BACKENDS, TARGETS, Durability, Topology
from lab.target import Target

__all__ = ["make_cluster", "make_target"]


def make_target(name: str) -> Target:
    if name == "broker_ref":
        return BrokerRefTarget()
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
) -> ProcessCluster:
    if backend != "process":
        raise UsageError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    if topology.nodes < 1:
        raise UsageError("a cluster needs at least one node")
    return ProcessCluster(
        topology,
        durability,
        make_target(target),
        work_dir,
        events=events,
        detached=detached,
        toxiproxy_port=toxiproxy_port,
    )
