"""A run's two Docker networks, and fixed addresses on the inner one.

    lab-<run>-net    internal: Toxiproxy and the nodes, each at a fixed address
    lab-<run>-edge   publishes ports on the host's 127.0.0.1; no masquerading and no
                     traffic between containers, so nothing leaves the host and no
                     node reaches another around Toxiproxy

Nodes and Toxiproxy address each other by IP, never by name: a name that does not
resolve (a node that is down) would make Docker's DNS ask the host's resolvers,
which is traffic beyond the lab's networks. Fixed addresses need a subnet of the
lab's choosing; the lab takes the one Docker's own allocator hands out (so it
avoids the host's routes) and pins it.
"""

from __future__ import annotations

import contextlib
import ipaddress
from dataclasses import dataclass
from typing import Any

import docker
from docker.errors import APIError, NotFound
from docker.types import IPAMConfig, IPAMPool

from lab.ground.errors import ClusterError

__all__ = ["RunNetworks", "Subnet"]

_EDGE_OPTIONS = {
    "com.docker.network.bridge.enable_ip_masquerade": "false",
    "com.docker.network.bridge.enable_icc": "false",
}
_TRIES = 5


@dataclass(frozen=True)
class Subnet:
    """The internal network's subnet: Toxiproxy at .2, node i (0-based) at .10 + i."""

    cidr: str

    def _host(self, offset: int) -> str:
        network = ipaddress.IPv4Network(self.cidr)
        if offset >= network.num_addresses - 1:
            raise ClusterError(f"subnet {self.cidr} is too small for the cluster")
        return str(network.network_address + offset)

    @property
    def toxiproxy(self) -> str:
        return self._host(2)

    def node(self, index: int) -> str:
        return self._host(10 + index)


class RunNetworks:
    """Creates, joins and removes the run's networks."""

    def __init__(self, client: docker.DockerClient, prefix: str, labels: dict[str, str]) -> None:
        self.client = client
        self.internal = f"{prefix}-net"
        self.edge = f"{prefix}-edge"
        self.labels = labels
        self.subnet: Subnet | None = None

    def create(self) -> Subnet:
        for _ in range(_TRIES):
            # Docker's allocator picks a subnet clear of the host's routes; take it and pin it.
            probe = self.client.networks.create(self.internal, internal=True, labels=self.labels)
            cidr = str(probe.attrs["IPAM"]["Config"][0]["Subnet"])
            probe.remove()
            try:
                self.client.networks.create(
                    self.internal,
                    internal=True,
                    labels=self.labels,
                    ipam=IPAMConfig(pool_configs=[IPAMPool(subnet=cidr)]),
                )
            except APIError:
                continue  # another network took the subnet meanwhile
            self.subnet = Subnet(cidr)
            break
        else:
            raise ClusterError(f"could not create network {self.internal} with a fixed subnet")
        self.client.networks.create(self.edge, labels=self.labels, options=_EDGE_OPTIONS)
        return self.subnet

    def endpoint(self, address: str, alias: str) -> dict[str, Any]:
        """Container-create arguments that put it on the internal network at `address`."""
        config = self.client.api.create_endpoint_config(aliases=[alias], ipv4_address=address)
        return {"network": self.internal, "networking_config": {self.internal: config}}

    def join_edge(self, container_id: str) -> None:
        """Publish the container's ports (they go live when it joins a bridged network)."""
        self.client.networks.get(self.edge).connect(container_id)

    def is_connected(self, container_id: str) -> bool:
        container = self.client.containers.get(container_id)
        networks = container.attrs.get("NetworkSettings", {}).get("Networks") or {}
        return self.internal in networks

    def disconnect(self, container_id: str) -> bool:
        """Take the container off the internal network; False when it was not on it."""
        if not self.is_connected(container_id):
            return False
        with contextlib.suppress(NotFound):
            self.client.networks.get(self.internal).disconnect(container_id, force=True)
        return True

    def connect(self, container_id: str, address: str, alias: str) -> bool:
        """Put it back at its own address; False when it was already there."""
        if self.is_connected(container_id):
            return False
        self.client.networks.get(self.internal).connect(
            container_id, aliases=[alias], ipv4_address=address
        )
        return True
