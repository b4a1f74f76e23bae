"""An active-passive cluster's cluster manager, run beside the brokers by either backend.

In active-passive mode a backend's cluster starts its brokers (all joining), then the
cluster manager (lab.manager), which promotes the first primary; only then does it wait
for the group to be ready (a primary and ready backups). The cluster answers the manager's
`Brokers` protocol: each broker's HA status over its management API, restart, fence (a
hung broker killed and started again), promote, and the virtual address: a client-facing
Toxiproxy proxy (`client_vip`) that the manager points at the primary.

The manager is a fault target, named `manager`: `kill` stops it, its heal starts it
again; `pause` freezes it, `resume` thaws it. `restart_cluster` is the operator's remedy
for a hung cluster (the seed's "restart the qpidd services, then the qpidd-primary
service"): every broker stopped and started, then the manager started anew.

When the brokers activate themselves (`group.active_passive.activation` self: a target like
Artemis), there is no manager and no virtual address: the cluster runs a StatusObserver
(lab.manager.observer), which records the brokers' roles and statuses as they change, and
`restart_cluster` stops and starts every broker.

For a target whose brokers dial a peer at the one address it announces (Artemis, whose
brokers take connections only while active), the proxies into a broker are closed while it
does not (down, or a passive backup: seen as the observer looks): a proxy accepts a connection
and only then finds its upstream closed, where the broker's own port would refuse it, and a
broker that finds a peer's address answering keeps dialling that peer rather than the next one
it knows. A link a fault holds cut stays cut.
"""

from __future__ import annotations

from typing import TypeVar

from lab.backends.base import ClusterBase, NodeHandle
from lab.ground.errors import ClusterError
from lab.ground.nodes import NodeStatus
from lab.ground.ports import HOST
from lab.ground.topology import split_node_link
from lab.manager.manager import STARTING, ClusterManager
from lab.manager.observer import NodeStates, StatusObserver
from lab.targets.management import ManagementTimeout, ManagementUnreachable
from lab.targets.protocol import DialsPeersByName, ManagedTarget

__all__ = ["MANAGER", "VIP", "ManagedCluster"]

MANAGER = "manager"
VIP = "client_vip"

N = TypeVar("N", bound=NodeHandle)


class ManagedCluster(ClusterBase[N]):
    manager: ClusterManager | None = None
    observer: StatusObserver | None = None
    _vip_port: int | None = None  # where the virtual address listens on 127.0.0.1

    @property
    def has_manager(self) -> bool:
        """An active-passive cluster whose brokers the lab's cluster manager promotes."""
        return self.group.is_active_passive and not self.group.active_passive.self_activated

    def _vip_upstream(self, name: str) -> str:
        """The address of broker `name`'s AMQP port as the Toxiproxy server reaches it."""
        raise NotImplementedError

    def vip_url(self) -> str | None:
        """The cluster's virtual address (active-passive mode), else None."""
        return None if self._vip_port is None else f"amqp://{HOST}:{self._vip_port}"

    def _start_manager(self) -> None:
        if self.has_manager and self.manager is None:
            self.manager = ClusterManager(self, self.group.active_passive, self.events)
            self.manager.start()
        elif self.group.is_active_passive and self.observer is None:
            assert isinstance(self.events, NodeStates)  # what the backends record events by
            self.observer = StatusObserver(self, self.events)
            self.observer.start()

    def _stop_manager(self) -> None:
        """First thing in `stop`: no broker is restarted while the cluster stops."""
        if self.manager is not None:
            self.manager.close()
            self.manager = None
        if self.observer is not None:
            self.observer.close()
            self.observer = None

    # ---- what the observer watches (lab.manager.observer.Watched) ---------------------------

    def starts(self, name: str) -> int:
        return self.node(name).starts

    def node_status(self, name: str, timeout_s: float) -> NodeStatus | None:
        node = self.node(name)
        status = None
        if node.running and not node.paused:
            status = self.target.status(node.plan, timeout_s)
        gated = isinstance(self.target, DialsPeersByName) and self.target.dials_peers_by_name
        if gated and (not node.running or status is not None):  # no answer: as it was
            self._gate_peer_links(name, status is not None and status.role == "MASTER")
        return status

    # ---- peer links into a broker that is down (see the module's note) ----------------------

    def _gate_peer_links(self, name: str, up: bool) -> None:
        with self.acting_on("peer-links"):
            down: set[str] = self.__dict__.setdefault("_down", set())
            if up == (name not in down):
                return
            cut: set[str] = self.__dict__.setdefault("_cut", set())
            for link in self.proxies:
                ends = split_node_link(link)
                if ends is not None and ends[1] == name and link not in cut:
                    self.proxy_client().set_enabled(link, up)
            # Only once every link is set: a failed call is made again at the next look.
            (down.discard if up else down.add)(name)

    def set_link(self, name: str, enabled: bool) -> None:
        """Cut (False) or restore (True) a link; a link into a broker that is down stays
        closed until it is up again (see the module's note)."""
        with self.acting_on("peer-links"):
            cut: set[str] = self.__dict__.setdefault("_cut", set())
            (cut.discard if enabled else cut.add)(name)
            ends = split_node_link(name)
            if enabled and ends is not None and ends[1] in self.__dict__.get("_down", set()):
                return
            super().set_link(name, enabled)

    # ---- what the manager drives (lab.manager.manager.Brokers) -----------------------------

    def running(self, name: str) -> bool:
        return self.node(name).running

    def ha_status(self, name: str, timeout_s: float) -> str | None:
        if not isinstance(self.target, ManagedTarget):
            raise ClusterError(f"target {self.target.name!r} has no management API")
        client = self.target.management(self.node(name).plan)
        client.timeout_s = timeout_s
        try:
            return str(client.ha().get("status"))
        except ManagementTimeout:
            return None
        except ManagementUnreachable:
            return STARTING

    def fence(self, name: str) -> None:
        node = self.node(name)
        with self.acting_on(name):
            node.kill()
            node.start()

    def promote(self, name: str) -> None:
        self.management(name).ha_action(action="promote")

    def point_vip(self, name: str) -> None:
        self.proxy_client().set_upstream(VIP, self._vip_upstream(name))

    # ---- the manager as a fault target ------------------------------------------------------

    def _manager(self) -> ClusterManager:
        if self.manager is None:
            raise ClusterError("this cluster has no cluster manager (active-passive mode only)")
        return self.manager

    def kill(self, name: str) -> None:
        if name == MANAGER:
            self._manager().stop()
        else:
            super().kill(name)

    def restart(self, name: str) -> None:
        if name == MANAGER:
            self._manager().start()
        else:
            super().restart(name)

    def pause(self, name: str) -> None:
        if name == MANAGER:
            self._manager().freeze()
        else:
            super().pause(name)

    def resume(self, name: str) -> None:
        if name == MANAGER:
            self._manager().thaw()
        else:
            super().resume(name)

    def restart_cluster(self) -> None:
        """Stop every broker and the manager, start the brokers, then the manager (brokers
        that activate themselves: every broker stopped and started)."""
        manager = self._manager() if self.has_manager else None
        if manager is not None:
            manager.stop()
        for name in self.nodes:
            self.kill(name)
        for name in self.nodes:
            self.restart(name)
        self.events.emit("cluster.restart", None)
        if manager is not None:
            manager.start()
