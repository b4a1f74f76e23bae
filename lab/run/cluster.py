"""What a run needs of a cluster, and what a run is made of (Jepsen's test map).

The run does not choose its cluster: whoever composes it (lab.compose, for the CLI, the
pytest plugin and campaigns) hands it a `ClusterFactory`, so the run layer imports no
backend. A backend's cluster answers `Cluster`; what faults need of it beyond that is
asked ability by ability (faults.abilities). `NoCluster` is a cluster of nothing (Jepsen's
`noop`), so a run can be composed as data in a unit test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from lab.ground.events import Events
from lab.ground.nodes import ClusterPlan, NodeStatus, TargetTraits
from lab.ground.spec import RunSpec
from lab.judge.bounds import Timings
from scenarios.base import Scenario

__all__ = ["Cluster", "ClusterFactory", "NoCluster", "RunParts"]


class Cluster(Protocol):
    """A group of nodes behind their proxies, as a run drives it."""

    @property
    def node_names(self) -> tuple[str, ...]: ...

    @property
    def plan(self) -> ClusterPlan | None:
        """Each node's ports and folders once the cluster is planned (at `start`)."""
        ...

    def check(self) -> None:
        """Refuse, before anything starts, a group the target cannot form (UsageError)."""
        ...

    def start(self) -> str:
        """Bring every node up and wait until the group is ready; return the master's name.
        On failure everything started is stopped again and the error raised."""
        ...

    def stop(self) -> None:
        """Stop everything; idempotent, safe from `finally`."""
        ...

    def wait_ready(self, timeout_s: float | None = None) -> str:
        """Wait until the group is whole again; return the master's name (ClusterError)."""
        ...

    def client_urls(self) -> list[str]:
        """The AMQP address clients use for each node (through its client proxy)."""
        ...

    def vip_url(self) -> str | None:
        """The cluster's virtual address (an active-passive cluster's), else None."""
        ...

    def statuses(self) -> Mapping[str, NodeStatus | None]:
        """Each node's status as it reports it now; None for a node that does not answer."""
        ...


ClusterFactory = Callable[[RunSpec, Path, Events], Cluster]
"""Makes the cluster of a run from its spec, in its folder, reporting to its events."""


class NoCluster:
    """A cluster of no nodes: starting and stopping it do nothing."""

    node_names: tuple[str, ...] = ()
    plan: ClusterPlan | None = None

    def check(self) -> None:
        return None

    def start(self) -> str:
        return ""

    def stop(self) -> None:
        return None

    def wait_ready(self, timeout_s: float | None = None) -> str:
        return ""

    def client_urls(self) -> list[str]:
        return []

    def vip_url(self) -> str | None:
        return None

    def statuses(self) -> Mapping[str, NodeStatus | None]:
        return {}


def _nothing_to_prepare() -> None:
    return None


@dataclass(frozen=True)
class RunParts:
    """What a run is made of besides its spec: the scenario (its prediction), what the
    target is like (its traits), how to make the cluster (on the hosts backend, from the
    hosts file `hosts_file`, which a reproducing command must name again), the run's
    timeouts that the prediction's bounds add (None: broker_ref's model with the target's
    allowances), and what to fetch first (the target's distribution at its version: before
    anything is written)."""

    scenario: Scenario
    target: TargetTraits
    cluster: ClusterFactory
    hosts_file: Path | None = None
    timings: Callable[[RunSpec], Timings] | None = None

    def timings_of(self, spec: RunSpec) -> Timings:
        return Timings.of(spec, self.target) if self.timings is None else self.timings(spec)

    prepare: Callable[[], None] = _nothing_to_prepare
