"""The process backend: Toxiproxy and every node as local processes on 127.0.0.1.

A target whose nodes reach each other at the addresses they advertise (Broker-J) gets,
as root, a loopback address of its own for each node's replication, so that a packet
filter can cut a pair (lab.backends.process.peer_filter).
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path
from typing import Any

from lab.backends.managed import VIP, ManagedCluster
from lab.backends.process.disks import NodeDisks, disk_refusal
from lab.backends.process.node import NodeProcess
from lab.backends.process.peer_filter import PeerFilter, node_address, peer_filter_refusal
from lab.backends.toxiproxy import ProxyInfo, ToxiproxyClient, start_server
from lab.ground.children import popen_options
from lab.ground.errors import ClusterError, LabError
from lab.ground.events import Events, NoEvents
from lab.ground.nodes import ClusterPlan, NodePlan
from lab.ground.ports import HOST, require_free
from lab.ground.spec import Durability, GroupSettings, Topology
from lab.ground.topology import Link, client_link, links_for, split_node_link
from lab.manager.observer import NodeStates
from lab.targets.forming import RunsLocalServices
from lab.targets.protocol import (
    DialsPeersByName,
    JvmTarget,
    Target,
    pair_address,
    run_command,
    witnesses_of,
)

__all__ = ["ProcessCluster"]

GROUP = "lab"


def _first_link_into(links: tuple[Link, ...], dest: str) -> Link:
    return next(link for link in links if not link.is_client and link.dest == dest)


class ProcessCluster(ManagedCluster[NodeProcess]):
    """A group of nodes behind Toxiproxy, as local processes.

    `start` either brings everything up or stops what it started and raises.
    `stop` is idempotent and safe to call from `finally`.
    """

    backend = "process"

    def __init__(
        self,
        topology: Topology,
        durability: Durability,
        target: Target,
        work_dir: Path,
        *,
        events: Events | None = None,
        detached: bool = False,
        toxiproxy_port: int | None = None,
        group: GroupSettings | None = None,
        disk_mb: int | None = None,
    ) -> None:
        self.topology = topology
        self.durability = durability
        self.group = group or GroupSettings()
        self.target = target
        self.work_dir = work_dir.resolve()
        self.events: Events = NodeStates(events or NoEvents())  # each node's last role
        self.detached = detached
        self._toxiproxy_port = toxiproxy_port
        self.toxiproxy_proc: subprocess.Popen[bytes] | None = None
        self.toxiproxy: ToxiproxyClient | None = None
        self.witness_names = witnesses_of(target, self.group)
        self.links: tuple[Link, ...] = links_for(
            topology.node_names, target.proxied_peer_links, self.witness_names
        )
        self.proxies: dict[str, ProxyInfo] = {}
        self.nodes: dict[str, NodeProcess] = {}
        self.witnesses: dict[str, NodeProcess] = {}
        # Processes beside the nodes for the run (RabbitMQ's port mapper), by name.
        self.service_names = target.local_services if isinstance(target, RunsLocalServices) else ()
        self.services: dict[str, subprocess.Popen[bytes]] = {}
        self.plan: ClusterPlan | None = None
        self._reserved: list[int] = []
        # Size-limited data disks, only for a run whose schedule fills one (J12): as root.
        self.disks = None if disk_mb is None else NodeDisks(disk_mb)
        # Node→node links without proxies, cut by packet filters: as root, not for `lab up`.
        self.filters_peer_links = (
            not target.proxied_peer_links and not detached and peer_filter_refusal() is None
        )
        self.peer_filter: PeerFilter | None = None
        # A target whose nodes dial a peer at the one address it announces (Artemis).
        self._by_name = isinstance(target, DialsPeersByName) and target.dials_peers_by_name

    # -- life cycle ---------------------------------------------------------------------------

    def start(self, timeout_s: float | None = None) -> str:
        """Start Toxiproxy, the proxies and the nodes; wait for a master; return its name."""
        try:
            self.target.prepare()
            self._start_toxiproxy()
            self._plan_and_proxy()
            self._mount_disks()
            self._start_nodes()
            self._start_manager()
            return self.wait_ready(timeout_s or self.target.ready_timeout_s)
        except BaseException:
            self.stop()
            raise

    def _start_toxiproxy(self) -> None:
        if self._toxiproxy_port is not None:
            require_free(self._toxiproxy_port, "Toxiproxy API", "--toxiproxy-port")
            port = self._toxiproxy_port
        else:
            port = self._take_ports(1)[0]
        self.toxiproxy_proc = start_server(
            port,
            self.work_dir / "toxiproxy.log",
            popen_extra=popen_options(self.detached),
        )
        self.toxiproxy = ToxiproxyClient(port)
        self.events.emit("toxiproxy.start", None, port=port, pid=self.toxiproxy_proc.pid)

    def _plan_and_proxy(self) -> None:
        assert self.toxiproxy is not None
        names = (*self.topology.node_names, *self.witness_names)
        ports = self._take_ports(3 * len(names) + len(self.links))
        if self.filters_peer_links:
            self.peer_filter = PeerFilter()
        node_plans = []
        for i, name in enumerate(names):
            node_dir = self.work_dir / "nodes" / name
            node_dir.mkdir(parents=True, exist_ok=True)
            replication_port = ports[3 * i + 2]
            host = HOST
            if self.peer_filter is not None:
                host = node_address(replication_port)
                self.peer_filter.add_node(name, host)
            node_plans.append(
                NodePlan(
                    name=name,
                    amqp_port=ports[3 * i],
                    management_port=ports[3 * i + 1],
                    replication_port=replication_port,
                    data_dir=node_dir / "data",
                    node_dir=node_dir,
                    replication_host=host,
                )
            )
        by_name = {p.name: p for p in node_plans}
        listen_ports = ports[3 * len(names) :]
        peers: dict[str, dict[str, str]] = {n: {} for n in names}
        for link, listen_port in zip(self.links, listen_ports, strict=True):
            dest = by_name[link.dest]
            upstream_port = dest.amqp_port if link.is_client else dest.replication_port
            listen = f"{HOST}:{listen_port}"
            if not link.is_client and self._by_name:
                # every proxy into a node on one port, each pair at its own address
                into = listen_ports[self.links.index(_first_link_into(self.links, link.dest))]
                pair = pair_address(names.index(link.source) + 1, names.index(link.dest) + 1)
                listen = f"{pair}:{into}"
            info = self.toxiproxy.create(link.name, listen, f"{HOST}:{upstream_port}")
            self.proxies[link.name] = info
            if not link.is_client:
                peers[link.source][link.dest] = info.listen
        members = len(self.topology.node_names)
        ports = self._take_ports(len(self.service_names))
        services = dict(zip(self.service_names, ports, strict=True))
        self.plan = ClusterPlan(
            group=GROUP,
            nodes=tuple(node_plans[:members]),
            durability=self.durability,
            peer_addresses=peers,
            settings=self.group,
            spares=self.topology.spares,
            witnesses=tuple(node_plans[members:]),
            services=services,
        )
        if self.has_manager:
            self._vip_port = self._take_ports(1)[0]
            self.proxies[VIP] = self.toxiproxy.create(
                VIP, f"{HOST}:{self._vip_port}", self._vip_upstream(names[0])
            )

    def _vip_upstream(self, name: str) -> str:
        assert self.plan is not None
        return f"{HOST}:{self.plan.node(name).amqp_port}"

    def check(self) -> None:
        """Refuse, before anything starts, a group the target cannot form, and size-limited
        disks where this process cannot mount them."""
        super().check()
        refusal = None if self.disks is None else disk_refusal()
        if refusal is not None:
            raise ClusterError(refusal)

    def _mount_disks(self) -> None:
        if self.disks is None:
            return
        assert self.plan is not None
        for plan in self.plan.nodes:
            self.disks.mount(plan.name, plan.data_dir)

    def _start_nodes(self) -> None:
        assert self.plan is not None
        cluster = self.plan

        def make(plan: NodePlan) -> NodeProcess:
            command = self.target.command(cluster, plan)
            if self.peer_filter is not None:
                command = self.peer_filter.wrap(plan.name, command)
            return NodeProcess(plan, command, self.target, self.events, self.detached)

        self._start_services()
        for plan in cluster.witnesses:  # beside the group, first; the run records none of them
            command = self.target.command(cluster, plan)
            witness = NodeProcess(plan, command, self.target, NoEvents(), self.detached)
            self.witnesses[plan.name] = witness
            witness.start()
        self._start_in_order(make)

    def _start_services(self) -> None:
        """The target's processes beside the nodes, before any node (they die with the lab,
        or outlive it with the cluster `lab up` leaves running)."""
        assert self.plan is not None
        target = self.target
        if not isinstance(target, RunsLocalServices):
            return
        for name in self.service_names:
            command = target.local_service(self.plan, name)
            with (self.work_dir / f"{name}.log").open("ab") as log:
                proc = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.work_dir,  # how `lab down` knows it as the cluster's
                    **popen_options(self.detached),
                )
            self.services[name] = proc
            self.events.emit("service.start", None, service=name, pid=proc.pid)

    def _stop_services(self) -> None:
        for name, proc in self.services.items():
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                self.events.emit("service.stop", None, service=name)
        self.services = {}

    def stop(self) -> None:
        """Stop the manager, every node and Toxiproxy; never raises for what is already gone."""
        self._stop_manager()
        asked = []
        for node in (*self.nodes.values(), *self.witnesses.values()):
            with contextlib.suppress(OSError, LabError):
                if node.ask_to_stop():
                    asked.append(node)
        for node in asked:
            with contextlib.suppress(OSError, LabError):
                node.wait_stopped()
        if self.toxiproxy_proc is not None and self.toxiproxy_proc.poll() is None:
            self.toxiproxy_proc.terminate()
            try:
                self.toxiproxy_proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.toxiproxy_proc.kill()
                self.toxiproxy_proc.wait()
            self.events.emit("toxiproxy.stop", None)
        self._stop_services()
        self._release_ports()
        errors = [] if self.disks is None else self.disks.unmount_all()
        if self.peer_filter is not None:
            errors.extend(self.peer_filter.remove())
        if errors:
            raise ClusterError("; ".join(errors))

    # -- node→node links by packet filters -----------------------------------------------------

    def _cut_refusal(self) -> str:
        if self.detached:
            return "not on a cluster `lab up` leaves running; they can be cut in a run"
        return peer_filter_refusal() or super()._cut_refusal()

    def set_link(self, name: str, enabled: bool) -> None:
        """A proxied link through Toxiproxy; a direct node→node link by the packet filter
        between the pair's own addresses, both ways."""
        ends = split_node_link(self.require_link(name))
        if ends is None or self.target.proxied_peer_links or self.peer_filter is None:
            super().set_link(name, enabled)
            return
        if enabled:
            self.peer_filter.heal(*ends)
        else:
            self.peer_filter.cut(*ends)
        self.events.emit("link.filter", ends[0], link=name, peer=ends[1], enabled=enabled)

    # -- size-limited disks (DiskFillable) ------------------------------------------------------

    def fill_disk(self, name: str) -> int:
        """Fill the node's data disk to ENOSPC with one file; return the bytes written."""
        self.node(name)
        written = self._disks().fill(name)
        self.events.emit("disk.fill", name, bytes=written)
        return written

    def free_disk(self, name: str) -> None:
        """Delete the fill file; nothing to do when there is none."""
        self.node(name)
        self._disks().free(name)
        self.events.emit("disk.free", name)

    def disk_free_bytes(self, name: str) -> int:
        return self._disks().free_bytes(name)

    def _disks(self) -> NodeDisks:
        if self.disks is None:
            raise ClusterError(
                "this cluster's nodes have no size-limited disks (a run mounts them only when "
                "its schedule fills a disk)"
            )
        return self.disks

    # -- what clients and faults use ---------------------------------------------------------

    def _run_full_gc(self, name: str, target: JvmTarget) -> str:
        return run_command(target.full_gc_command(self.node(name).pid))

    def client_urls(self) -> list[str]:
        """The AMQP address of each node through its client proxy, in node order."""
        return [
            f"amqp://{HOST}:{self.proxies[client_link(n)].listen_port}" for n in self.node_names
        ]

    def describe(self) -> dict[str, Any]:
        """What `lab up` prints and saves: nodes with their client and management addresses."""
        assert self.plan is not None
        urls = self.client_urls()
        return {
            "nodes": [
                {
                    "name": plan.name,
                    "amqp": url,
                    "management": f"http://{HOST}:{plan.management_port}",
                }
                for plan, url in zip(self.plan.nodes, urls, strict=True)
            ]
        }

    def pids(self) -> dict[str, int]:
        every = {**self.nodes, **self.witnesses}
        found = {name: node.pid for name, node in every.items() if node.pid is not None}
        if self.toxiproxy_proc is not None:
            found["toxiproxy"] = self.toxiproxy_proc.pid
        found.update({name: proc.pid for name, proc in self.services.items()})
        return found
