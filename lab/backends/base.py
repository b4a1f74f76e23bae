"""What every backend's cluster shares: nodes by name, their status, the proxies, node faults.

A backend (local processes, containers) subclasses `ClusterBase`, fills `nodes`,
`plan`, `proxies` and `toxiproxy` as it starts, and provides `start`, `stop`,
`client_urls` and `describe`.

The group's membership (Broker-J's HA chapter, "Node Operations"): the topology's spares
have a handle from the start but are started only by `add_node`, to join the running group;
`remove_node` stops a node gracefully and has the master remove it for good. Nodes outside
the group (spares not yet added, removed nodes) are not waited for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Generic, Protocol, TypeVar

from lab.backends.toxiproxy import ProxyInfo, ToxiproxyClient
from lab.ground.errors import ClusterError, UsageError
from lab.ground.events import Events
from lab.ground.nodes import ClusterPlan, NodePlan, NodeStatus
from lab.ground.ports import HOST, free_ports, release_ports
from lab.ground.spec import Durability, GroupSettings, Topology
from lab.ground.topology import split_node_link
from lab.targets.forming import wait_formed, wait_founded
from lab.targets.management import (
    ManagementClient,
    ManagementRefused,
    ManagementTimeout,
    ManagementUnreachable,
)
from lab.targets.protocol import ActivatesItself, JvmTarget, ManagedTarget, Target

__all__ = ["ClusterBase", "NodeHandle", "group_ready"]


class NodeHandle(Protocol):
    """One node as a backend runs it."""

    plan: NodePlan
    paused: bool
    starts: int  # how many times it was started

    @property
    def running(self) -> bool: ...

    def start(self) -> None: ...

    def kill(self) -> None: ...

    def stop(self, timeout_s: float = 5.0) -> None:
        """SIGTERM; SIGKILL when it has not ended within `timeout_s`."""
        ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def exit_detail(self) -> str:
        """How it ended, for an error message (status, where its stderr is)."""
        ...


N = TypeVar("N", bound=NodeHandle)
_LOCKS_LOCK = threading.Lock()
GRACEFUL_STOP_S = 30.0  # a graceful stop's time to end before SIGKILL
REMOVAL_WAIT_S = 10.0  # how long remove_node looks for a master that removes the node
NOT_A_MEMBER = 404  # the management API's answer when the node to remove is no member


def group_ready(statuses: Mapping[str, NodeStatus | None]) -> bool:
    """Every node answers, exactly one is MASTER and every other one is REPLICA."""
    roles = [s.role if s is not None else None for s in statuses.values()]
    return roles.count("MASTER") == 1 and all(r in ("MASTER", "REPLICA") for r in roles)


class ClusterBase(Generic[N]):
    topology: Topology
    durability: Durability
    group: GroupSettings
    target: Target
    nodes: dict[str, N]
    plan: ClusterPlan | None
    proxies: dict[str, ProxyInfo]
    toxiproxy: ToxiproxyClient | None
    events: Events
    _reserved: list[int]
    # The spares added so far, and the nodes removed (in order): replaced, never mutated.
    _added: frozenset[str] = frozenset()
    _removed: tuple[str, ...] = ()

    def _run_full_gc(self, name: str, target: JvmTarget) -> str:
        """Run the target's full-GC command on the node where it runs; return its output."""
        raise ClusterError(f"the {type(self).__name__} cannot run commands in its nodes")

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

    @property
    def spares(self) -> tuple[str, ...]:
        """The nodes started only by add_node (the plan's, once planned)."""
        return self.plan.spares if self.plan is not None else self.topology.spares

    def outside(self) -> frozenset[str]:
        """The nodes the group does not count now: spares not yet added, removed nodes."""
        return (frozenset(self.spares) - self._added) | frozenset(self._removed)

    def removed_nodes(self) -> tuple[str, ...]:
        return self._removed

    def check(self) -> None:
        """Refuse, before anything starts, a group the target cannot form."""
        self.target.check(
            ClusterPlan.outline(
                self.node_names, self.durability, self.group, spares=self.topology.spares
            )
        )

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

    def _start_in_order(self, make: Callable[[NodePlan], N]) -> None:
        """Start every node but the spares (`make` gives its handle, not yet started), the
        group's founder first and alone when the target's group grows from its first node
        (then the others start once it is master: the group of one is ready). A handle is in
        `nodes` before it starts, so `stop` reaches a node whose start failed half-way; a
        spare's handle is there from the start, not started (lab.targets.forming: a target
        that forms its group itself says when its founder is ready, and forms it last)."""
        assert self.plan is not None
        plans = []
        for plan in self.plan.nodes:
            if plan.name in self.plan.spares:
                self.nodes[plan.name] = make(plan)  # not started: add_node starts it
            else:
                plans.append(plan)
        if self.target.founded_by_first_node and len(plans) > 1:
            founder = plans.pop(0)
            self.nodes[founder.name] = make(founder)
            self.nodes[founder.name].start()
            wait_founded(self.target, self.plan, self._ended, self.wait_ready)
        for plan in plans:
            self.nodes[plan.name] = make(plan)
            self.nodes[plan.name].start()
        wait_formed(self.target, self.plan, self._ended)

    def _ended(self) -> str | None:
        """How a node of the group ended, when one has (None while all run)."""
        for name, node in self.nodes.items():
            if name not in self.outside() and not node.running and not node.paused:
                return f"node {name} {node.exit_detail()}"
        return None

    def wait_ready(self, timeout_s: float | None = None) -> str:
        """Wait until every node answers, exactly one is MASTER and every other is REPLICA
        (a target whose brokers activate themselves: its own rule, and a broker that stopped
        itself, as such a backup may, is left out); return the master's name. The default
        wait is the target's own."""
        timeout_s = timeout_s or self.target.ready_timeout_s
        deadline = time.monotonic() + timeout_s
        last: Mapping[str, NodeStatus | None] = {}
        own = self.target if isinstance(self.target, ActivatesItself) else None
        while time.monotonic() < deadline:
            outside = self.outside()
            never = self._never_ready()  # a misconfigured broker may stop itself
            for name, node in self.nodes.items():
                if name in outside or name in never or node.running or node.paused:
                    continue
                if own is None:
                    raise ClusterError(f"node {name} {node.exit_detail()}")
                never = never | {name}
            # the brokers still in the group: one left alone needs no backup in sync
            brokers = len([n for n in self.nodes if n not in outside | never])
            last = {n: s for n, s in self.statuses().items() if n not in outside}
            running = {n: s for n, s in last.items() if n not in never}
            if group_ready(running) if own is None else own.group_ready(running, brokers):
                return next(n for n, s in last.items() if s is not None and s.role == "MASTER")
            time.sleep(0.05)
        roles = {n: (s.role if s else "no answer") for n, s in last.items()}
        raise ClusterError(f"the cluster was not ready within {timeout_s} s: {roles}")

    def _never_ready(self) -> frozenset[str]:
        """Nodes not waited for: an active-passive cluster's misconfigured brokers."""
        if not self.group.is_active_passive:
            return frozenset()
        return self.group.active_passive.misconfigured()

    def proxy_client(self) -> ToxiproxyClient:
        if self.toxiproxy is None:
            raise ClusterError("Toxiproxy is not running")
        return self.toxiproxy

    # Whether this cluster cuts node→node links that have no proxy (by packet filters).
    filters_peer_links = False

    @property
    def proxied_peer_links(self) -> bool:
        """Whether node→node links run through Toxiproxy proxies: the target's say, unless a
        backend's nodes always reach each other directly (the hosts backend)."""
        return self.target.proxied_peer_links

    def _cut_refusal(self) -> str:
        """Where node→node links without a proxy can be cut, said when this cluster cannot."""
        return "they can be cut only on the Docker backend (a packet filter in the node)"

    def _peer_links_refusal(self, how: str) -> str | None:
        """Why node→node links cannot be `cut` (or `slow`ed) on this cluster; None if they can."""
        if self.proxied_peer_links or (how == "cut" and self.filters_peer_links):
            return None
        where = self._cut_refusal() if how == "cut" else "no proxy can slow them"
        return (
            f"{self.target.name} nodes reach each other at the addresses they advertise to "
            f"the group, so node→node links have no proxy: {where}"
        )

    def check_peer_links(self, how: str) -> None:
        """Refuse, before anything starts, a fault that must `cut` or `slow` a node→node
        link this cluster cannot reach (a UsageError naming why)."""
        refusal = self._peer_links_refusal(how)
        if refusal is not None:
            raise UsageError(refusal)

    def require_link(self, name: str) -> str:
        """The name of a link this cluster can cut; a ClusterError when there is none."""
        ends = split_node_link(name)
        if ends is not None and not self.proxied_peer_links and self.filters_peer_links:
            for node in ends:
                self.node(node)
            if ends[0] == ends[1]:
                raise ClusterError(f"no link named {name!r}")
            return name
        return self._require(name, "cut")

    def require_proxy(self, name: str) -> str:
        """The name of a link with a Toxiproxy proxy (toxics need one)."""
        return self._require(name, "slow")

    def _require(self, name: str, how: str) -> str:
        if name in self.proxies:
            return name
        refusal = self._peer_links_refusal(how) if split_node_link(name) else None
        if refusal is not None:
            raise ClusterError(f"link {name}: {refusal}")
        raise ClusterError(f"no link named {name!r} (links: {', '.join(self.proxies)})")

    def set_link(self, name: str, enabled: bool) -> None:
        """Cut (False) or restore (True) one link; idempotent."""
        link = self.require_link(name)
        self.proxy_client().set_enabled(link, enabled)

    def acting_on(self, name: str) -> threading.Lock:
        """The lock held while a node is killed, started, paused or resumed: faults and an
        active-passive cluster's manager act on nodes from different threads."""
        with _LOCKS_LOCK:
            locks: dict[str, threading.Lock] = self.__dict__.setdefault("_node_locks", {})
            return locks.setdefault(name, threading.Lock())

    def kill(self, name: str) -> None:
        node = self.node(name)
        with self.acting_on(name):
            node.kill()

    def stop_node(self, name: str) -> None:
        """Stop a node as an operator does (SIGTERM; SIGKILL after 30 s)."""
        node = self.node(name)
        with self.acting_on(name):
            node.stop(timeout_s=GRACEFUL_STOP_S)

    def restart(self, name: str) -> None:
        node = self.node(name)
        with self.acting_on(name):
            node.start()

    def pause(self, name: str) -> None:
        node = self.node(name)
        with self.acting_on(name):
            node.pause()

    def full_gc(self, name: str) -> None:
        """A full garbage collection in the node's JVM, now (`jcmd … GC.run`)."""
        if not isinstance(self.target, JvmTarget):
            raise ClusterError(
                f"full_gc needs a JVM target; {self.target.name} is not one "
                "(the pause fault models a stall on any target)"
            )
        node = self.node(name)
        if not node.running or node.paused:
            raise ClusterError(f"full_gc: node {name} is not running")
        started = time.monotonic()
        output = self._run_full_gc(name, self.target)
        self.events.emit(
            "node.gc",
            name,
            seconds=round(time.monotonic() - started, 3),
            output=output.splitlines()[-1] if output else "",
        )

    def resume(self, name: str) -> None:
        node = self.node(name)
        with self.acting_on(name):
            node.resume()

    # -- the group's membership (faults.abilities Joinable, Removable) -----------------------

    def add_node(self, name: str) -> None:
        """Start a spare to join the running group (or a removed node again, which the group
        refuses); a member already in the group is refused."""
        node = self.node(name)
        if name not in self.outside():
            raise ClusterError(f"add_node: {name} is a member of the group already")
        with self.acting_on(name):
            self.events.emit("node.add", name)
            node.start()
        if name in self.spares:
            self._added = self._added | {name}

    def remove_node(self, name: str) -> None:
        """Stop the node gracefully, then have the master (read from the roles, waiting
        for one while there is none) remove it from the group through its management API."""
        if name in self._removed:
            raise ClusterError(f"remove_node: {name} was removed already")
        if name in self.outside():
            raise ClusterError(f"remove_node: {name} is a spare not yet added")
        self.stop_node(name)
        stopped = time.monotonic()
        master, refused = self._remove_through_master(name)
        self._removed = (*self._removed, name)
        seconds = round(time.monotonic() - stopped, 3)
        self.events.emit("node.remove", name, by=master, refused=refused, seconds=seconds)

    def _remove_through_master(self, name: str) -> tuple[str, list[str]]:
        """Ask the master to remove `name`; return the master's name and the refusals before
        it did. A refusal other than "not a member" (the node still counted active, a master
        just stepped down) and a moment without a master are tried again until
        REMOVAL_WAIT_S (and the target's election allowance) have passed."""
        wait_s = REMOVAL_WAIT_S + self.target.election_allowance_s
        deadline = time.monotonic() + wait_s
        refused: list[str] = []
        timed_out = False  # a request may have removed the node without an answer
        while True:
            roles = self.roles()
            masters = [n for n, r in roles.items() if r == "MASTER" and n != name]
            last = f"no one master among {roles}"
            if len(masters) == 1:
                try:
                    self.management(masters[0]).remove_node(name)
                    return masters[0], refused
                except ManagementRefused as exc:
                    if exc.status == NOT_A_MEMBER and timed_out:
                        return masters[0], refused  # the request that timed out removed it
                    if exc.status == NOT_A_MEMBER:
                        raise ClusterError(f"remove_node {name}: {masters[0]} said {exc}") from exc
                    last = f"{masters[0]} refused: {exc}"
                    if last not in refused:
                        refused.append(last)
                except (ManagementTimeout, ManagementUnreachable) as exc:
                    timed_out = timed_out or isinstance(exc, ManagementTimeout)
                    last = str(exc)
            if time.monotonic() >= deadline:
                raise ClusterError(f"remove_node {name}: not removed within {wait_s:g} s: {last}")
            time.sleep(0.2)
