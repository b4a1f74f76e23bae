"""What only containers can have done to them, as abilities of the Docker cluster: a full
disk (`DiskFillable`), a node off its network (`Disconnectable`), node→node links
without a proxy cut by a packet filter inside the node (`Linked`), and netem on its
interface (`NetemShaped`, lab.backends.docker.node_netem)."""

from __future__ import annotations

from collections.abc import Mapping

from lab.backends.docker import node_filter, node_netem
from lab.backends.docker.networks import RunNetworks, Subnet
from lab.backends.docker.node_container import NodeContainer
from lab.backends.docker.volumes import RunVolumes
from lab.backends.managed import ManagedCluster
from lab.ground.errors import ClusterError
from lab.ground.topology import split_node_link

__all__ = ["ContainerAbilities"]


class ContainerAbilities(ManagedCluster[NodeContainer]):
    """Mixed into DockerCluster, which sets the run's volumes and networks as it starts."""

    volumes: RunVolumes | None
    networks: RunNetworks | None
    subnet: Subnet | None

    def _networks(self) -> tuple[RunNetworks, Subnet]:
        if self.networks is None or self.subnet is None:
            raise ClusterError("the cluster's networks are not there")
        return self.networks, self.subnet

    def fill_disk(self, name: str) -> int:
        """Fill the node's data disk to ENOSPC with one file; return the bytes written."""
        written = self._volumes(name).fill(name)
        self.events.emit("disk.fill", name, bytes=written)
        return written

    def free_disk(self, name: str) -> None:
        """Delete the fill file; nothing to do when there is none."""
        self._volumes(name).free(name)
        self.events.emit("disk.free", name)

    def disk_free_bytes(self, name: str) -> int:
        return self._volumes(name).free_bytes(name)

    def _volumes(self, name: str) -> RunVolumes:
        self.node(name)
        if self.volumes is None:
            raise ClusterError("the cluster's volumes are not there")
        return self.volumes

    filters_peer_links = True

    def set_link(self, name: str, enabled: bool) -> None:
        """A proxied link through Toxiproxy; a direct node→node link by a packet filter in
        its source node (lab.backends.docker.node_filter), both ways between the pair."""
        ends = split_node_link(self.require_link(name))
        if ends is None or self.target.proxied_peer_links:
            super().set_link(name, enabled)
            return
        source, dest = ends
        _, subnet = self._networks()
        pid = self.node(source).pid
        if pid is None:
            if enabled:
                return  # a node that is not running has no filter left to remove
            raise ClusterError(f"cannot cut {name}: node {source} is not running")
        peer = subnet.node(self.node_names.index(dest))
        if enabled:
            node_filter.unblock(pid, peer)
        else:
            node_filter.block(pid, peer)
        self.events.emit("link.filter", source, link=name, peer=dest, enabled=enabled)

    def disconnect(self, name: str) -> None:
        """docker network disconnect: the node leaves the run's network (peers, Toxiproxy)."""
        node = self.node(name)
        networks, _ = self._networks()
        if node.container is not None and networks.disconnect(node.container.id):
            self.events.emit("network.disconnect", name, network=networks.internal)

    def reconnect(self, name: str) -> None:
        """docker network connect, at the node's own address again; idempotent."""
        node = self.node(name)
        networks, subnet = self._networks()
        address = subnet.node(self.node_names.index(name))
        if node.container is not None and networks.connect(node.container.id, address, name):
            self.events.emit("network.connect", name, network=networks.internal)

    # -- netem on a node's interface (faults.host_faults) ------------------------------------

    def netem_refusal(self, params: Mapping[str, object]) -> str | None:
        return node_netem.netem_refusal(params)

    def _netem_place(self, name: str) -> tuple[int, str, tuple[str, ...]]:
        _, subnet = self._networks()
        pid = self.node(name).pid
        if pid is None:
            raise ClusterError(f"netem: node {name} is not running")
        others = [subnet.node(i) for i, n in enumerate(self.node_names) if n != name]
        return pid, subnet.node(self.node_names.index(name)), (*others, subnet.toxiproxy)

    def shape(self, name: str, params: Mapping[str, object]) -> None:
        pid, address, peers = self._netem_place(name)
        how = node_netem.shape(pid, address, params, peers)
        self.__dict__.setdefault("_shaped", {})[name] = dict(params)
        self.events.emit("netem.set", name, params=dict(params), how=how)

    def unshape(self, name: str) -> None:
        params = self.__dict__.get("_shaped", {}).pop(name, None)
        if params is None or self.node(name).pid is None:
            return  # never shaped, or its container's namespace ended with it
        pid, address, peers = self._netem_place(name)
        node_netem.unshape(pid, address, params, peers)
        self.events.emit("netem.clear", name)
