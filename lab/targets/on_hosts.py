"""How a target runs on machines of its own (the hosts backend, lab.backends.ssh): where a
node's things are on its host, how it starts there, and the target's side of it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from lab.ground.nodes import ClusterPlan, NodePlan
from lab.ground.spec import GroupSettings

__all__ = ["HostLaunch", "HostPlace", "LabService", "RunsOnHosts"]


@dataclass(frozen=True)
class HostPlace:
    """Where a node's things are on the host that carries it (the hosts backend): the run's
    folder there, and the host's own Python."""

    root: str
    python: str = "python3"
    # The run's lab services (LabService) as this host reaches them: name → 127.0.0.1:<port>.
    services: tuple[tuple[str, str], ...] = ()

    def service(self, name: str) -> str:
        """Where this host reaches the lab service `name` (a KeyError if the run has none)."""
        return dict(self.services)[name]

    def shipped(self, name: str) -> str:
        """Where a shipment (RunsOnHosts.host_shipment) is unpacked on the host."""
        return f"{self.root}/ship/{name}"

    def node_dir(self, node: str) -> str:
        return f"{self.root}/nodes/{node}"


@dataclass(frozen=True)
class HostLaunch:
    """How a node starts on its host: its configuration file and command line, with the
    environment it needs (on top of what the backend gives every node)."""

    config: bytes
    config_path: str
    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class LabService:
    """A process the nodes need beside them that the lab runs for the run on its own machine,
    on 127.0.0.1, and each host reaches through its SSH connection (a port on the host's
    127.0.0.1 forwarded back): a lock manager the brokers on different machines share.
    `command(folder, port)` makes what it needs in `folder` and gives its command line."""

    name: str
    command: Callable[[Path, int], list[str]]


@runtime_checkable
class RunsOnHosts(Protocol):
    """A target whose nodes can run on machines of their own (the hosts backend)."""

    def host_shipment(self) -> dict[str, Path]:
        """What each host needs from this machine, by name: a .tar.gz unpacked into
        HostPlace.shipped(name) (broker_ref and its Python packages, Broker-J's distribution)."""
        ...

    def host_needs(self) -> tuple[str, ...]:
        """The host's own commands the nodes need (`python`: the host's Python, `java`)."""
        ...

    def host_services(self, settings: GroupSettings) -> tuple[LabService, ...]:
        """The lab services a group with these settings needs on hosts (most need none); a
        UsageError, before anything starts, for settings that cannot run on hosts."""
        ...

    def host_launch(
        self, cluster: ClusterPlan, node: NodePlan, address_of: dict[str, str], place: HostPlace
    ) -> HostLaunch:
        """The node's configuration and command on its host; `node` is its host's view (its
        ports there, data in its folder there) and `address_of` maps each node to the
        host:port its peers reach its replication service at."""
        ...
