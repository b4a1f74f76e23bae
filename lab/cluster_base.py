"""What every backend's cluster shares: nodes by name, their status, the proxies, node faults.

A backend (local processes, containers) subclasses `ClusterBase`, fills `nodes`,
`plan`, `proxies` and `toxiproxy` as it starts, and provides `start`, `stop`,
`client_urls` and `describe`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Generic, Protocol, TypeVar

from lab.errors import ClusterError
from lab.management import ManagementClient
from lab.ports import HOST, free_ports, release_ports
from lab.spec import Topology
from lab.target import ClusterPlan, ManagedTarget, NodePlan, NodeStatus, Target
from lab.toxiproxy_api import ProxyInfo, ToxiproxyClient

__all__ = ["ClusterBase", "NodeHandle", "group_ready"]


class NodeHandle(Protocol):
    """One node as a backend runs it."""

    plan: NodePlan
    paused: bool

    @property
    def running(self) -> bool: ...

    def start(self) -> None: ...

    def kill(self) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def exit_detail(self) -> str:
        """How it ended, for an error message (status, where its stderr is)."""
        ...


N = TypeVar("N", bound=NodeHandle)


def group_ready(statuses: Mapping[str, NodeStatus | None]) -> bool:
    """Every node answers, exactly one is MASTER and every other one is REPLICA."""
    roles = [s.role if s is not None else None for s in statuses.values()]
    return roles.count("MASTER") == 1 and all(r in ("MASTER", "REPLICA") for r in roles)


class ClusterBase(Generic[N]):
    topology: Topology
    target: Target
    nodes: dict[str, N]
    plan: ClusterPlan | None
    proxies: dict[str, ProxyInfo]
    toxiproxy: ToxiproxyClient | None
    _reserved: list[int]

    def _take_ports(self, count: int) -> list[int]:
        """Free ports, reserved until `_release_ports` (in `stop`)."""
        ports = free_ports(count)
        self._reserved.extend(ports)
        return ports

    def _release_ports(self) -> None:
        release_ports(self._reserved)
        self._reserved = []

    @property
    def node_names(self) -> tuple[str, ...]:
        return self.topology.node_names

    def direct_urls(self) -> list[str]:
        """The nodes' own AMQP addresses, bypassing Toxiproxy (for measuring its cost)."""
        assert self.plan is not None
        return [f"amqp://{HOST}:{p.amqp_port}" for p in self.plan.nodes]

    def node(self, name: str) -> N:
        try:
            return self.nodes[name]
        except KeyError:
            raise ClusterError(f"no node named {name!r} (nodes: {', '.join(self.nodes)})") from None

    def statuses(self) -> dict[str, NodeStatus | None]:
        return {
            name: (None if node.paused or not node.running else self.target.status(node.plan))
            for name, node in self.nodes.items()
        }

    def roles(self) -> dict[str, str | None]:
        """Each node's role as it reports it now; None for a node that does not answer."""
        return {name: (s.role if s else None) for name, s in self.statuses().items()}

    def management(self, name: str) -> ManagementClient:
        """A client for the node's management API (on 127.0.0.1)."""
        if not isinstance(self.target, ManagedTarget):
            raise ClusterError(f"target {self.target.name!r} has no management API")
        return self.target.management(self.node(name).plan)

    def wait_ready(self, timeout_s: float = 30.0) -> str:
        """Wait until every node answers, exactly one is MASTER and every other is REPLICA;
        return the master's name."""
        deadline = time.monotonic() + timeout_s
        last: Mapping[str, NodeStatus | None] = {}
        while time.monotonic() < deadline:
            for name, node in self.nodes.items():
                if not node.running and not node.paused:
                    raise ClusterError(f"node {name} {node.exit_detail()}")
            last = self.statuses()
            if group_ready(last):
                return next(n for n, s in last.items() if s is not None and s.role == "MASTER")
            time.sleep(0.05)
        roles = {n: (s.role if s else "no answer") for n, s in last.items()}
        raise ClusterError(f"the cluster was not ready within {timeout_s} s: {roles}")

    def proxy_client(self) -> ToxiproxyClient:
        if self.toxiproxy is None:
            raise ClusterError("Toxiproxy is not running")
        return self.toxiproxy

    def require_link(self, name: str) -> str:
        if name not in self.proxies:
            raise ClusterError(f"no link named {name!r} (links: {', '.join(self.proxies)})")
        return name

    def kill(self, name: str) -> None:
        self.node(name).kill()

    def restart(self, name: str) -> None:
        self.node(name).start()

    def pause(self, name: str) -> None:
        self.node(name).pause()

    def resume(self, name: str) -> None:
        self.node(name).resume()
