"""The Docker backend: every node and Toxiproxy as a container; the same interface as
ProcessCluster, so the runner, the faults and `lab up` work unchanged.

    127.0.0.1 (the lab)                     lab-<run>-net (internal, fixed addresses)
      Toxiproxy API, client proxies ──▶  toxiproxy (.2) ──▶ n1 (.10):5672, n2 (.11):7000 …
      each node's AMQP and management ─▶  n1, n2 …   (a node's peers: <toxiproxy>:<port>)

The lab reaches containers only through ports published on 127.0.0.1 (lab.backends.docker.networks
says why there are two networks and why addresses, not names). Each node's data is a
size-limited tmpfs volume (lab.backends.docker.volumes) that survives a kill and restart. The
run's labels on everything (lab.backends.docker.labels) are how `stop` and the reaper find them.
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import docker
import requests
from docker.errors import APIError
from docker.models.containers import Container
from testcontainers.core.config import testcontainers_config
from testcontainers.core.container import DockerContainer

from lab.backends.docker.abilities import ContainerAbilities
from lab.backends.docker.engine import Say, ensure_engine
from lab.backends.docker.images import build_images
from lab.backends.docker.labels import Owner, RunLabels, new_run_id
from lab.backends.docker.networks import RunNetworks, Subnet
from lab.backends.docker.node_config import (
    AMQP_PORT,
    DATA_DIR,
    MANAGEMENT_PORT,
    REPLICATION_PORT,
    container_node_plan,
)
from lab.backends.docker.node_container import NodeContainer
from lab.backends.docker.node_redirect import ANNOUNCED_BASE, redirect
from lab.backends.docker.reaper import remove_run
from lab.backends.docker.records import TOXIPROXY, ContainerRecords
from lab.backends.docker.volumes import RunVolumes
from lab.backends.managed import VIP
from lab.backends.toxiproxy import ProxyInfo, ToxiproxyClient
from lab.ground.errors import ClusterError, LabError
from lab.ground.events import Events, NoEvents
from lab.ground.nodes import ClusterPlan, NodePlan
from lab.ground.ports import HOST, require_free
from lab.ground.spec import Durability, GroupSettings, Topology
from lab.ground.topology import Link, links_for
from lab.manager.observer import NodeStates
from lab.targets.protocol import ContainerLaunch, DialsPeersByName, Target, witnesses_of

__all__ = ["DockerCluster"]

GROUP = "lab"
TOXIPROXY_API_PORT = 8474
CLIENT_PROXY_BASE = 10000  # client_to_<node i> listens on 10000 + i inside Toxiproxy
PEER_PROXY_BASE = 11000  # node→node proxies listen on 11000 + k


def _say_on_stderr(line: str) -> None:
    print(f"lab: docker: {line}", file=sys.stderr, flush=True)


class DockerCluster(ContainerAbilities, ContainerRecords):
    """A group of nodes behind Toxiproxy, as containers on a per-run network.

    `start` either brings everything up or removes what it created and raises.
    `stop` is idempotent and safe to call from `finally`.
    """

    backend = "docker"

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
        session: str | None = None,
        say: Say | None = None,
    ) -> None:
        self.topology = topology
        self.durability = durability
        self.group = group or GroupSettings()
        self.target = target
        self.work_dir = work_dir.resolve()
        self.events: Events = NodeStates(events or NoEvents())  # each node's last role
        self.detached = detached
        self.disk_mb = disk_mb or target.data_disk_mb
        self.say: Say = say or _say_on_stderr
        self._toxiproxy_port = toxiproxy_port
        self.run_id = new_run_id()
        self.labels = RunLabels(
            self.run_id, Owner.this_process(), work_dir, detached=detached, session=session
        )
        self.witness_names = witnesses_of(target, self.group)
        self.links: tuple[Link, ...] = links_for(
            topology.node_names, target.proxied_peer_links, self.witness_names
        )
        self.proxies: dict[str, ProxyInfo] = {}
        self.nodes: dict[str, NodeContainer] = {}
        self.witnesses: dict[str, NodeContainer] = {}
        self.plan: ClusterPlan | None = None
        self._reserved: list[int] = []
        self.toxiproxy: ToxiproxyClient | None = None
        self.toxiproxy_container: Container | None = None
        self.volumes: RunVolumes | None = None
        self.networks: RunNetworks | None = None
        self.subnet: Subnet | None = None
        self._client: docker.DockerClient | None = None
        self._client_ports: dict[str, int] = {}
        self._images: dict[str, str] = {}
        # A target whose nodes dial a peer at the one address it announces (Artemis):
        # lab.backends.docker.node_redirect.
        self._by_name = isinstance(target, DialsPeersByName) and target.dials_peers_by_name

    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            raise ClusterError("the cluster is not started")
        return self._client

    def _name(self, part: str) -> str:
        return f"lab-{self.run_id}-{part}"

    @property
    def _brokers(self) -> tuple[str, ...]:
        """The nodes, then the witnesses (each at its own address on the run's network)."""
        return (*self.node_names, *self.witness_names)

    def _data_volume(self, node: str) -> str:
        assert self.volumes is not None
        return self.volumes.name(node)

    # -- life cycle ---------------------------------------------------------------------------

    def start(self, timeout_s: float | None = None) -> str:
        """Create networks, volumes, Toxiproxy, proxies and nodes; wait for a master."""
        # Testcontainers' reaper needs a pulled image; the lab reaps by its own labels.
        testcontainers_config.ryuk_disabled = True
        try:
            self._client = ensure_engine(self.say)
            self.target.prepare()
            self._images = build_images(self.say, (self.target.name,))
            if self.target.name not in self._images:
                raise ClusterError(f"no container image for target {self.target.name!r}")
            self.work_dir.mkdir(parents=True, exist_ok=True)
            self._create_networks()
            self._create_volumes()
            self._start_toxiproxy()
            self._plan()
            self._start_nodes()
            self._create_proxies()
            self._start_manager()
            return self.wait_ready(timeout_s or self.target.ready_timeout_s)
        except BaseException:
            self.stop()
            raise

    def _create_networks(self) -> None:
        self.networks = RunNetworks(self.client, f"lab-{self.run_id}", self.labels.base())
        self.subnet = self.networks.create()

    def _create_volumes(self) -> None:
        base = self._images["base"]
        self.volumes = RunVolumes(self.client, f"lab-{self.run_id}", self.disk_mb, base)
        self.volumes.create(
            self._brokers,
            self.labels.for_role("volumes"),
            {n: self.labels.for_role("volume", n) for n in self._brokers},
        )

    def _start_toxiproxy(self) -> None:
        networks, subnet = self._networks()
        if self._toxiproxy_port is not None:
            require_free(self._toxiproxy_port, "Toxiproxy API", "--toxiproxy-port")
            api_port = self._toxiproxy_port
            client_ports = self._take_ports(len(self.node_names))
        else:
            api_port, *client_ports = self._take_ports(1 + len(self.node_names))
        spec = DockerContainer(self._images["toxiproxy"], name=self._name(TOXIPROXY)).with_kwargs(
            labels=self.labels.for_role(TOXIPROXY),
            init=True,
            **networks.endpoint(subnet.toxiproxy, TOXIPROXY),
        )
        _publish(spec, TOXIPROXY_API_PORT, api_port)
        for i, (name, port) in enumerate(zip(self.node_names, client_ports, strict=True)):
            _publish(spec, CLIENT_PROXY_BASE + i + 1, port)
            self._client_ports[name] = port
        if self.has_manager:  # the virtual address: CLIENT_PROXY_BASE itself
            self._vip_port = self._take_ports(1)[0]
            _publish(spec, CLIENT_PROXY_BASE, self._vip_port)
        spec.start()
        self.toxiproxy_container = spec.get_wrapped_container()
        networks.join_edge(self.toxiproxy_container.id)
        _wait_http(f"http://{HOST}:{api_port}/version", 20.0, "Toxiproxy API")
        self.toxiproxy = ToxiproxyClient(api_port)
        self.events.emit(
            "toxiproxy.start", None, port=api_port, container=self.toxiproxy_container.name
        )

    def _listen_port(self, link: Link) -> int:
        """Where a link's proxy listens inside the Toxiproxy container."""
        if link.is_client:
            return CLIENT_PROXY_BASE + self.node_names.index(link.dest) + 1
        peer_links = [candidate for candidate in self.links if not candidate.is_client]
        return PEER_PROXY_BASE + peer_links.index(link) + 1

    def _plan(self) -> None:
        _, subnet = self._networks()
        names = self._brokers
        ports = self._take_ports(2 * len(names))
        host_plans: list[NodePlan] = []
        for i, name in enumerate(names):
            node_dir = self.work_dir / "nodes" / name
            node_dir.mkdir(parents=True, exist_ok=True)
            host_plans.append(
                NodePlan(
                    name=name,
                    amqp_port=ports[2 * i],
                    management_port=ports[2 * i + 1],
                    replication_port=REPLICATION_PORT,
                    data_dir=self._host_data_dir(name, node_dir),
                    node_dir=node_dir,
                )
            )
        peers: dict[str, dict[str, str]] = {n: {} for n in names}
        for link in self.links:
            if not link.is_client:
                peers[link.source][link.dest] = f"{subnet.toxiproxy}:{self._listen_port(link)}"
        members = len(self.node_names)
        self.plan = ClusterPlan(
            group=GROUP,
            nodes=tuple(host_plans[:members]),
            durability=self.durability,
            peer_addresses=peers,
            settings=self.group,
            spares=self.topology.spares,
            witnesses=tuple(host_plans[members:]),
        )

    def _create_proxies(self) -> None:
        """Every link's proxy, once the nodes run: until then a node dialling a peer is
        refused at once and tries again, rather than waiting on an address not yet up."""
        assert self.toxiproxy is not None
        _, subnet = self._networks()
        for link in self.links:
            dest = subnet.node(self._brokers.index(link.dest))
            port = AMQP_PORT if link.is_client else REPLICATION_PORT
            self.proxies[link.name] = self.toxiproxy.create(
                link.name, f"0.0.0.0:{self._listen_port(link)}", f"{dest}:{port}"
            )
        if self.has_manager:
            upstream = self._vip_upstream(self.node_names[0])
            self.proxies[VIP] = self.toxiproxy.create(VIP, f"0.0.0.0:{CLIENT_PROXY_BASE}", upstream)

    def _vip_upstream(self, name: str) -> str:
        _, subnet = self._networks()
        return f"{subnet.node(self.node_names.index(name))}:{AMQP_PORT}"

    def _host_data_dir(self, name: str, node_dir: Path) -> Path:
        """Where the host sees the node's data (a local engine's volume), for store listings."""
        found = self.volumes.host_path(name) if self.volumes is not None else None
        return found if found is not None else node_dir / "data"

    def _start_nodes(self) -> None:
        assert self.plan is not None
        # The same plan as the containers see it: fixed ports, data on /data.
        nodes = tuple(container_node_plan(p.name, p.node_dir) for p in self.plan.nodes)
        witnesses = tuple(container_node_plan(p.name, p.node_dir) for p in self.plan.witnesses)
        inside = replace(self.plan, nodes=nodes, witnesses=witnesses)
        _, subnet = self._networks()
        address_of = {
            name: f"{subnet.node(i)}:{REPLICATION_PORT}" for i, name in enumerate(self._brokers)
        }
        if self._by_name:  # where nothing listens: each peer's own rules lead to the proxy
            address_of = {
                name: f"{subnet.toxiproxy}:{ANNOUNCED_BASE + i + 1}"
                for i, name in enumerate(self._brokers)
            }

        def make(plan: NodePlan) -> NodeContainer:
            launch = self.target.container_launch(inside, inside.node(plan.name), address_of)
            return NodeContainer(
                plan,
                partial(self._create_node, plan, launch),
                self.target,
                self.events,
                self.detached,
                partial(self._redirect, plan.name) if self._by_name else None,
            )

        for plan in self.plan.witnesses:  # beside the group, first; the run records none of them
            launch = self.target.container_launch(inside, inside.node(plan.name), address_of)
            witness = NodeContainer(
                plan,
                partial(self._create_node, plan, launch),
                self.target,
                NoEvents(),
                self.detached,
                partial(self._redirect, plan.name) if self._by_name else None,
            )
            self.witnesses[plan.name] = witness
            witness.start()
        self._start_in_order(make)

    def _create_node(self, plan: NodePlan, launch: ContainerLaunch) -> Container:
        networks, subnet = self._networks()
        spec = (
            DockerContainer(self._images[self.target.name], name=self._name(plan.name))
            .with_kwargs(
                labels=self.labels.for_role("node", plan.name),
                init=True,
                entrypoint=list(launch.command),
                **networks.endpoint(subnet.node(self._brokers.index(plan.name)), plan.name),
            )
            .with_volume_mapping(self._data_volume(plan.name), str(DATA_DIR), "rw")
            .with_copy_into_container(launch.config, launch.config_path, mode=0o600)  # a secret
        )
        if launch.shared_dir is not None:
            assert self.volumes is not None
            spec = spec.with_volume_mapping(self.volumes.shared, launch.shared_dir, "rw")
        _publish(spec, AMQP_PORT, plan.amqp_port)
        _publish(spec, MANAGEMENT_PORT, plan.management_port)
        spec.start()
        container = spec.get_wrapped_container()
        networks.join_edge(container.id)
        return container

    def _redirect(self, name: str, pid: int) -> None:
        """In node `name`'s namespace, each peer's announced address to their pair's proxy."""
        _, subnet = self._networks()
        pairs = {
            ANNOUNCED_BASE + self._brokers.index(link.dest) + 1: self._listen_port(link)
            for link in self.links
            if not link.is_client and link.source == name
        }
        redirect(pid, subnet.toxiproxy, pairs)

    def stop(self) -> None:
        """Stop the manager and every node, then remove every container, network and volume
        of the run (what resists is left for the reaper, which the next lab command runs)."""
        self._stop_manager()
        for node in (*self.nodes.values(), *self.witnesses.values()):
            with contextlib.suppress(LabError, APIError, OSError):
                node.stop()
        if self._client is None:
            self._release_ports()
            return
        try:
            removed = remove_run(self._client, self.run_id)
        except (LabError, APIError, OSError, requests.RequestException) as exc:
            self.events.emit("docker.not_removed", None, run=self.run_id, error=str(exc))
        else:
            if self.toxiproxy_container is not None:
                self.events.emit("toxiproxy.stop", None)
                self.toxiproxy_container = None
            if removed:
                self.events.emit("docker.removed", None, run=self.run_id, removed=removed)
        self._release_ports()

    # -- what clients and faults use ---------------------------------------------------------

    def client_urls(self) -> list[str]:
        """The AMQP address of each node through its client proxy, in node order."""
        return [f"amqp://{HOST}:{self._client_ports[n]}" for n in self.node_names]


def _publish(spec: DockerContainer, container_port: int, host_port: int) -> None:
    """Publish a container port on the host's 127.0.0.1 only (with_bind_ports binds all)."""
    spec.ports[f"{container_port}/tcp"] = (HOST, host_port)  # type: ignore[assignment]


def _wait_http(url: str, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(requests.RequestException):
            if requests.get(url, timeout=0.5).ok:
                return
        time.sleep(0.05)
    raise ClusterError(f"{what} did not answer at {url} within {timeout_s} s")
