"""The hosts backend: each node on a machine of its own, driven over SSH; Toxiproxy and the
clients on the lab's machine, as on the other backends.

    lab's machine                                  hosts (the hosts file's)
      clients → Toxiproxy 127.0.0.1:<p> ────────▶  h1:<amqp>  n1 ◀──── node→node, direct ───▶ n2 …
      management → 127.0.0.1:<q> ═ SSH forward ═▶  h1's 127.0.0.1:<mgmt>

Node→node traffic goes straight between the hosts, over their real network: cuts and
partitions are packet filters on the hosts (lab.backends.ssh.host_tools), as a real partition
is; so are the host-only faults (netem on a node's interface, its clock by libfaketime). The
lab reaches each node's management API through its SSH connection (a port forward), so a
fault on the node's network never hides the node's role from the lab.

Start order: a record of the session (so a killed lab's hosts are cleaned by the next command),
SSH to every host and its facts checked, the run's folder made on each host and what the target
needs shipped there, Toxiproxy, ports chosen on each host, the nodes. `stop` fetches each node's
folder into the run folder and removes everything the run put on the hosts.
"""

from __future__ import annotations

import contextlib
import subprocess
import tarfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from lab.backends.managed import VIP
from lab.backends.ssh.abilities import HostAbilities
from lab.backends.ssh.connection import HostConnection, SshLoop
from lab.backends.ssh.facts import HostFacts
from lab.backends.ssh.hosts_file import Host, Inventory
from lab.backends.ssh.install import ask_facts, fetch, free_ports, install, needed_tools
from lab.backends.ssh.node import HostNode
from lab.backends.ssh.services import LabServices
from lab.backends.ssh.session import HostSession, cleanup_command
from lab.backends.toxiproxy import ToxiproxyClient, start_server
from lab.ground.children import popen_options
from lab.ground.errors import ClusterError, LabError, UsageError
from lab.ground.events import Events, NoEvents
from lab.ground.nodes import ClusterPlan, NodePlan, NodeStatus
from lab.ground.ports import HOST, require_free
from lab.ground.spec import Durability, GroupSettings, Topology
from lab.ground.topology import Link, client_link, links_for
from lab.manager.observer import NodeStates
from lab.targets.on_hosts import HostPlace, LabService, RunsOnHosts
from lab.targets.protocol import Target
from lab.targets.python_shipment import python_requirement

__all__ = ["SshCluster"]

GROUP = "lab"


class SshCluster(HostAbilities):
    """A group of nodes on the hosts of an inventory, behind Toxiproxy on this machine.

    `start` either brings everything up or removes what it put anywhere and raises.
    `stop` is idempotent and safe to call from `finally`."""

    backend = "ssh"

    def __init__(
        self,
        topology: Topology,
        durability: Durability,
        target: Target,
        work_dir: Path,
        *,
        hosts: Inventory | None = None,
        events: Events | None = None,
        detached: bool = False,
        toxiproxy_port: int | None = None,
        group: GroupSettings | None = None,
        disk_mb: int | None = None,
        clock: str | None = None,
    ) -> None:
        if hosts is None:
            raise UsageError("--backend ssh needs a hosts file: --hosts FILE")
        self.topology = topology
        self.durability = durability
        self.group = group or GroupSettings()
        self.target = target
        self.work_dir = work_dir.resolve()
        self.events: Events = NodeStates(events or NoEvents())  # each node's last role
        self.detached = detached
        self.inventory = hosts
        self.disk_mb = disk_mb
        self.clock_mode = clock  # None: no clock faults; "realtime" or "monotonic" too
        self._toxiproxy_port = toxiproxy_port
        self.toxiproxy_proc: subprocess.Popen[bytes] | None = None
        self.toxiproxy: ToxiproxyClient | None = None
        self.links: tuple[Link, ...] = links_for(topology.node_names, peer_links=False)
        self.proxies = {}
        self.nodes: dict[str, HostNode] = {}
        self.plan: ClusterPlan | None = None
        self._reserved: list[int] = []
        self.session = HostSession.new()
        self.loop: SshLoop | None = None
        self.conns: dict[str, HostConnection] = {}
        self.facts: dict[str, HostFacts] = {}
        self.host_ports: dict[str, tuple[int, int, int]] = {}
        self.services = LabServices(self.work_dir, self.events, detached)
        self._needs: tuple[LabService, ...] = ()
        self._service_at: dict[str, tuple[tuple[str, str], ...]] = {}

    # -- what the cluster is, before anything starts -----------------------------------------

    @property
    def proxied_peer_links(self) -> bool:
        return False  # node→node traffic goes straight between the hosts

    def host(self, node: str) -> Host:
        return self.inventory.host_for(node)

    def _hosts(self) -> list[Host]:
        return [self.host(n) for n in self.topology.node_names]

    def check(self) -> None:
        """Refuse, before anything starts, what the hosts cannot carry (one line each)."""
        super().check()
        if not isinstance(self.target, RunsOnHosts):
            raise UsageError(f"target {self.target.name} cannot run on hosts (--backend ssh)")
        self._needs = self.target.host_services(self.group)
        if self._needs and self.detached:
            raise UsageError(
                f"{self._needs[0].name} runs on the lab's machine for the run and is reached "
                "through the run's SSH connections, which end when `lab up` returns: give "
                "the target an address of your own for it"
            )
        self.inventory.check_nodes(self.topology.node_names)
        if self.disk_mb is not None:
            raise UsageError("a full disk (disk_fill) is not offered on hosts: --backend docker")
        python = python_requirement()
        for facts in self._facts().values():
            refusal = facts.refusal(self.target.host_needs(), python)
            if refusal is not None:
                raise ClusterError(refusal)

    def _facts(self) -> dict[str, HostFacts]:
        """Each host's facts, asked once (over a connection of its own when not started)."""
        if not self.facts:
            with ThreadPoolExecutor(max_workers=8) as pool:
                self.facts = {f.host.node: f for f in pool.map(ask_facts, self._hosts())}
        return self.facts

    # -- life cycle ---------------------------------------------------------------------------

    def start(self, timeout_s: float | None = None) -> str:
        """Ship, plan and start everything; wait for a master; return its name."""
        try:
            self.check()
            self.target.prepare()
            self.session.record(self.inventory, self._hosts(), self.detached)
            self.events.emit(
                "hosts.session",
                None,
                session=self.session.id,
                hosts={h.node: f"{h.name} {h.address}:{h.port}" for h in self._hosts()},
            )
            self.loop = SshLoop()
            self._parallel(self._connect_and_install)
            self._service_at = self.services.start(
                self._needs, lambda: self._take_ports(1)[0], self.conns
            )
            self._start_toxiproxy()
            self._plan_and_proxy()
            self._start_nodes()
            self._start_manager()
            return self.wait_ready(timeout_s or self.target.ready_timeout_s)
        except BaseException:
            self.stop()
            raise

    def _parallel(self, work: Any) -> None:
        with ThreadPoolExecutor(max_workers=8) as pool:
            for future in [pool.submit(work, h) for h in self._hosts()]:
                future.result()

    def _connect_and_install(self, host: Host) -> None:
        assert self.loop is not None and isinstance(self.target, RunsOnHosts)
        conn = HostConnection(host, self.loop)
        self.conns[host.node] = conn
        tools = needed_tools(self.clock_mode is not None)
        facts = install(conn, self.session.root(host), self.target, self._facts()[host.node], tools)
        if facts is not None:
            self.events.emit("hosts.install", None, host=host.name, packages=sorted(tools.values()))
            self.facts[host.node] = facts

    def _start_toxiproxy(self) -> None:
        if self._toxiproxy_port is not None:
            require_free(self._toxiproxy_port, "Toxiproxy API", "--toxiproxy-port")
            port = self._toxiproxy_port
        else:
            port = self._take_ports(1)[0]
        self.toxiproxy_proc = start_server(
            port, self.work_dir / "toxiproxy.log", popen_extra=popen_options(self.detached)
        )
        self.toxiproxy = ToxiproxyClient(port)
        self.events.emit("toxiproxy.start", None, port=port, pid=self.toxiproxy_proc.pid)

    def _plan_and_proxy(self) -> None:
        assert self.toxiproxy is not None
        names = self.topology.node_names
        plans = []
        for name in names:
            host = self.host(name)
            amqp, management, replication = self.host_ports[name] = free_ports(self.conns[name])
            node_dir = self.work_dir / "nodes" / name
            node_dir.mkdir(parents=True, exist_ok=True)
            local_management = self.conns[name].forward(management)
            plans.append(
                NodePlan(
                    name=name,
                    amqp_port=amqp,
                    management_port=local_management,
                    replication_port=replication,
                    data_dir=node_dir / "data",
                    node_dir=node_dir,
                    replication_host=host.address,
                )
            )
        peers = {
            n: {m: f"{self.host(m).address}:{self.host_ports[m][2]}" for m in names if m != n}
            for n in names
        }
        listen = self._take_ports(len(self.links))
        for link, port in zip(self.links, listen, strict=True):
            upstream = f"{self.host(link.dest).address}:{self.host_ports[link.dest][0]}"
            self.proxies[link.name] = self.toxiproxy.create(link.name, f"{HOST}:{port}", upstream)
        self.plan = ClusterPlan(
            group=GROUP,
            nodes=tuple(plans),
            durability=self.durability,
            peer_addresses=peers,
            settings=self.group,
            spares=self.topology.spares,
        )
        if self.group.is_active_passive:
            self._vip_port = self._take_ports(1)[0]
            self.proxies[VIP] = self.toxiproxy.create(
                VIP, f"{HOST}:{self._vip_port}", self._vip_upstream(names[0])
            )

    def _management(self, name: str) -> str:
        return f"{self.host(name).address}:{self.host_ports[name][1]}"

    def _vip_upstream(self, name: str) -> str:
        return f"{self.host(name).address}:{self.host_ports[name][0]}"

    def place(self, node: str) -> HostPlace:
        host = self.host(node)
        return HostPlace(self.session.root(host), host.python, self._service_at.get(node, ()))

    def _start_nodes(self) -> None:
        assert self.plan is not None and isinstance(self.target, RunsOnHosts)
        target = self.target
        inside = replace(
            self.plan,
            nodes=tuple(
                replace(
                    p,
                    management_port=self.host_ports[p.name][1],
                    data_dir=Path(PurePosixPath(self.place(p.name).node_dir(p.name), "data")),
                )
                for p in self.plan.nodes
            ),
        )
        address_of = {
            n: f"{self.host(n).address}:{self.host_ports[n][2]}" for n in self.topology.node_names
        }

        def make(plan: NodePlan) -> HostNode:
            place = self.place(plan.name)
            launch = target.host_launch(inside, inside.node(plan.name), address_of, place)
            conn = self.conns[plan.name]
            conn.write(launch.config_path, launch.config)
            env = [f"{k}={v}" for k, v in (*launch.env, *self._clock_env(plan.name))]
            command = ["env", "-u", "LC_ALL", *env, *launch.command]
            node_dir = place.node_dir(plan.name)
            return HostNode(plan, conn, node_dir, command, self.target, self.events, self.detached)

        self._start_in_order(make)

    def stop(self) -> None:
        """Stop the manager and every node, fetch each node's folder into the run folder,
        remove everything the run put on its hosts, stop Toxiproxy; never raises for what is
        gone already; what could not be removed stays recorded for the reaper, and is said."""
        self._stop_manager()
        self._stop_strobes()
        if self.detached and self.nodes:
            self._close()
            return
        problems: list[str] = []
        with ThreadPoolExecutor(max_workers=8) as pool:
            for node in self.nodes.values():
                pool.submit(_quietly, node.stop)
        self.services.stop()
        for name, conn in self.conns.items():
            with contextlib.suppress(LabError, OSError, tarfile.TarError):
                fetch(conn, self.place(name).node_dir(name), self.work_dir / "nodes" / name)
            host = self.host(name)
            try:
                conn.run(cleanup_command(self.session.root(host), self.session.tag, host))
            except LabError as exc:
                problems.append(str(exc))
        if not problems and self.loop is not None:
            self.session.forget()
        self._close()
        if self.toxiproxy_proc is not None and self.toxiproxy_proc.poll() is None:
            self.toxiproxy_proc.terminate()
            try:
                self.toxiproxy_proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.toxiproxy_proc.kill()
                self.toxiproxy_proc.wait()
            self.events.emit("toxiproxy.stop", None)
        self._release_ports()
        if problems:
            raise ClusterError("; ".join(problems))

    def _close(self) -> None:
        for conn in self.conns.values():
            conn.close()
        self.conns = {}
        if self.loop is not None:
            self.loop.close()
            self.loop = None

    def statuses(self) -> dict[str, NodeStatus | None]:
        """Each node's status, asked of all nodes at once (each answer crosses SSH)."""
        with ThreadPoolExecutor(max_workers=8) as pool:
            return dict(zip(self.nodes, pool.map(self._status, self.nodes.values()), strict=True))

    def _status(self, node: HostNode) -> NodeStatus | None:
        return None if node.paused or not node.running else self.target.status(node.plan)

    # -- what clients use ----------------------------------------------------------------------

    def client_urls(self) -> list[str]:
        return [
            f"amqp://{HOST}:{self.proxies[client_link(n)].listen_port}" for n in self.node_names
        ]

    def direct_urls(self) -> list[str]:
        return [f"amqp://{self._vip_upstream(n)}" for n in self.node_names]

    def describe(self) -> dict[str, Any]:
        assert self.plan is not None
        return {
            "nodes": [
                {
                    "name": name,
                    "amqp": url,
                    "host": f"{self.host(name).name} ({self.host(name).address})",
                    "management": f"http://{self._management(name)} (on the host)",
                }
                for name, url in zip(self.node_names, self.client_urls(), strict=True)
            ]
        }

    def pids(self) -> dict[str, int]:
        found = self.services.pids()
        if self.toxiproxy_proc is not None:
            found["toxiproxy"] = self.toxiproxy_proc.pid
        return found


def _quietly(stop: Any) -> None:
    with contextlib.suppress(LabError, OSError):
        stop()
