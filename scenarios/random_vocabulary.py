"""What `random` draws from, fault by fault, and how much each fault weighs on the group.

A drawn fault (`Draw`) says what it does to the promise (see random_faults.py for the rule):

    out       takes one node out of the majority: killed, stopped by its operator, frozen,
              or cut off (isolated, alone across a partition or a one-way partition, or
              one node→node direction broken by a bandwidth or reset toxic), or an
              active-passive broker taken out
    operator  an operator's action on a healthy group (transfer_master)
    light     takes nothing out: latency below the election timeout on a node link, toxics
              and cuts on client links, a full GC on a JVM, the cluster manager stopped or
              frozen (active-passive), a slow but sufficient node link (active-passive)

Every draw is a pure function of the spec and the run's `random.Random`. `selectors` lets a
draw name a role (`@master`, `@replica:N`), resolved when it is applied; a fault that starts
while another lasts names nodes, so the rule can be checked on the schedule itself and no
selector waits on an election that cannot happen.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from lab.ground.spec import RunSpec
from lab.ground.topology import client_link, node_link

__all__ = [
    "AP_LIGHT",
    "AP_OUT",
    "GROUP_LIGHT",
    "GROUP_OPERATOR",
    "GROUP_OUT",
    "MANAGER",
    "VIP",
    "Draw",
    "Kind",
    "available",
    "below_election_timeout_ms",
    "can_cut",
    "draw_kind",
    "inside_link_heartbeat_ms",
]

Effect = Literal["out", "operator", "light"]
Params = Mapping[str, int | float | str | bool]

MANAGER = "manager"  # an active-passive cluster's cluster manager, as a fault target
VIP = "client_vip"  # an active-passive cluster's virtual address: the clients' only link
SPLITS = ("partition", "isolate", "one_way_partition")


@dataclass(frozen=True)
class Draw:
    """One fault as drawn: the fault, its target and parameters, and its `effect`.

    `nodes` are the nodes it acts on, by name (none when it names a role or acts on no node);
    `split` says whether it cuts node→node links (two splits never overlap: each one's heal
    enables links the other holds cut)."""

    fault: str
    target: str
    effect: Effect
    params: Params = field(default_factory=dict)
    nodes: tuple[str, ...] = ()
    split: bool = False

    @property
    def names_a_role(self) -> bool:
        return "@" in self.target or any("@" in str(v) for v in self.params.values())


@dataclass(frozen=True)
class Kind:
    """A kind of draw: its name in the vocabulary, how often it is drawn, and how."""

    name: str
    weight: float
    draw: Callable[[RunSpec, random.Random, bool], Draw]  # (spec, rng, selectors)
    needs: Literal[
        "",
        "proxied_peer_links",
        "cut_peer_links",
        "one_way",
        "jvm",
        "transfer_master",
        "hosts",
        "hosts_jvm",
        "manager",
    ] = ""


def _ms(rng: random.Random, low: int, high: int) -> int:
    return rng.randint(low, max(low, high))


def _node(spec: RunSpec, rng: random.Random, selectors: bool) -> str:
    nodes = spec.topology.node_names
    roles = ("@master", *(f"@replica:{i}" for i in range(1, len(nodes)))) if selectors else ()
    return rng.choice((*nodes, *roles))


def _pair(spec: RunSpec, rng: random.Random) -> tuple[str, str]:
    a, b = rng.sample(spec.topology.node_names, 2)
    return a, b


def _process(fault: str) -> Callable[[RunSpec, random.Random, bool], Draw]:
    def draw(spec: RunSpec, rng: random.Random, selectors: bool) -> Draw:
        target = _node(spec, rng, selectors)
        return Draw(fault, target, "out", nodes=() if "@" in target else (target,))

    return draw


def _partition(spec: RunSpec, rng: random.Random, selectors: bool) -> Draw:
    nodes = spec.topology.node_names
    alone = rng.choice(nodes)
    rest = ",".join(n for n in nodes if n != alone)
    return Draw("partition", "group", "out", {"sides": f"{alone}|{rest}"}, (alone,), split=True)


def _isolate(spec: RunSpec, rng: random.Random, selectors: bool) -> Draw:
    target = _node(spec, rng, selectors)
    return Draw("isolate", target, "out", nodes=() if "@" in target else (target,), split=True)


def _one_way(spec: RunSpec, rng: random.Random, selectors: bool) -> Draw:
    """One node's bytes to the others blackholed, or theirs to it: either way it is out."""
    nodes = spec.topology.node_names
    alone = rng.choice(nodes)
    rest = ",".join(n for n in nodes if n != alone)
    sides = f"{alone}|{rest}" if rng.random() < 0.5 else f"{rest}|{alone}"
    return Draw("one_way_partition", "group", "out", {"sides": sides}, (alone,), split=True)


def _broken_link(toxic: str) -> Callable[[RunSpec, random.Random, bool], Draw]:
    """A node→node link slowed past use (a few KB/s) or reset: one direction out."""

    def draw(spec: RunSpec, rng: random.Random, selectors: bool) -> Draw:
        a, b = _pair(spec, rng)
        params: Params = (
            {"rate_kbs": _ms(rng, 1, 16)}
            if toxic == "bandwidth"
            else {"timeout_ms": _ms(rng, 0, 200)}
        )
        return Draw(toxic, node_link(a, b), "out", params, (a, b))

    return draw


def _transfer(spec: RunSpec, rng: random.Random, selectors: bool) -> Draw:
    replicas = tuple(f"@replica:{i}" for i in range(1, spec.topology.nodes))
    return Draw("transfer_master", rng.choice(replicas), "operator")


def _latency_params(rng: random.Random, bound_ms: int) -> Params:
    """Latency and jitter whose sum stays under `bound_ms`."""
    latency = _ms(rng, 20, bound_ms * 3 // 4)
    return {"latency_ms": latency, "jitter_ms": _ms(rng, 0, bound_ms - latency - 1)}


def _node_latency(
    bound: Callable[[RunSpec], int],
) -> Callable[[RunSpec, random.Random, bool], Draw]:
    def draw(spec: RunSpec, rng: random.Random, selectors: bool) -> Draw:
        a, b = _pair(spec, rng)
        return Draw("latency", node_link(a, b), "light", _latency_params(rng, bound(spec)))

    return draw


def below_election_timeout_ms(spec: RunSpec) -> int:
    """A delay every heartbeat still beats: two thirds of the election timeout."""
    return int(spec.group.election_timeout_s * 1000 * 2 / 3)


def _client_target(spec: RunSpec, rng: random.Random, selectors: bool) -> str:
    ap = spec.group.active_passive
    if spec.group.is_active_passive and not ap.self_activated:
        return VIP
    nodes = spec.topology.node_names
    return client_link(rng.choice((*nodes, "@master") if selectors else nodes))


def _client(fault: str) -> Callable[[RunSpec, random.Random, bool], Draw]:
    def draw(spec: RunSpec, rng: random.Random, selectors: bool) -> Draw:
        target = _client_target(spec, rng, selectors)
        params: Params
        if fault == "latency":
            params = _latency_params(rng, 500)
        elif fault == "bandwidth":
            params = {"rate_kbs": _ms(rng, 4, 64)}
        elif fault == "reset_peer":
            params = {"timeout_ms": _ms(rng, 0, 500)}
        else:
            params = {}
        return Draw(fault, target, "light", params)

    return draw


def _netem(spec: RunSpec, rng: random.Random, selectors: bool) -> Draw:
    """Loss, duplication or both on one node's interface (it may fall out of the majority)."""
    target = _node(spec, rng, selectors)
    params: Params = {"loss_pct": _ms(rng, 0, 30), "duplicate_pct": _ms(rng, 0, 20)}
    if not any(params.values()):
        params = {"loss_pct": _ms(rng, 1, 30)}
    return Draw("netem", target, "out", params, () if "@" in target else (target,))


def _clock(fault: str) -> Callable[[RunSpec, random.Random, bool], Draw]:
    """One node's clock jumps, drifts or strobes (its monotonic clock with it): the node may
    time out its peers, or they it."""

    def draw(spec: RunSpec, rng: random.Random, selectors: bool) -> Draw:
        target = _node(spec, rng, selectors)
        sign = rng.choice((-1, 1))
        params: Params
        if fault == "clock_jump":
            params = {"offset_s": sign * _ms(rng, 5, 300), "monotonic": True}
        elif fault == "clock_drift":
            rate = round(rng.uniform(1.05, 2.0) if sign > 0 else rng.uniform(0.5, 0.95), 3)
            params = {"rate": rate, "monotonic": True}
        else:
            params = {"delta_s": sign * _ms(rng, 5, 60), "period_s": 1, "monotonic": True}
        return Draw(fault, target, "out", params, () if "@" in target else (target,))

    return draw


def _full_gc(spec: RunSpec, rng: random.Random, selectors: bool) -> Draw:
    return Draw("full_gc", rng.choice((*spec.topology.node_names, "@master")), "light")


def _ap_node_bandwidth(spec: RunSpec, rng: random.Random, selectors: bool) -> Draw:
    """A slower node link that still carries the stream (a few tens of KB/s at the
    scenario's load): the backup behind it stays ready."""
    a, b = _pair(spec, rng)
    return Draw("bandwidth", node_link(a, b), "light", {"rate_kbs": _ms(rng, 128, 512)})


def _manager(fault: str) -> Callable[[RunSpec, random.Random, bool], Draw]:
    def draw(spec: RunSpec, rng: random.Random, selectors: bool) -> Draw:
        return Draw(fault, MANAGER, "light")

    return draw


def inside_link_heartbeat_ms(spec: RunSpec) -> int:
    """A delay well inside twice the link heartbeat (when a backup is dead to its primary)."""
    return min(500, int(spec.group.active_passive.link_heartbeat_interval_s * 1000 / 2))


# The replicated group's vocabulary (names as the property tests count them).
GROUP_OUT: tuple[Kind, ...] = (
    Kind("kill", 3, _process("kill")),
    Kind("graceful_stop", 1, _process("graceful_stop")),  # first in its round only
    Kind("pause", 2, _process("pause")),
    Kind("partition", 2, _partition, "cut_peer_links"),
    Kind("isolate", 2, _isolate, "cut_peer_links"),
    Kind("one_way_partition", 3, _one_way, "one_way"),
    Kind("node bandwidth", 1, _broken_link("bandwidth"), "proxied_peer_links"),
    Kind("node reset_peer", 1, _broken_link("reset_peer"), "proxied_peer_links"),
    # Hosts only (--backend ssh), last: drawn nowhere else, so no other backend's draws move.
    Kind("netem", 2, _netem, "hosts"),
    Kind("clock_jump", 1, _clock("clock_jump"), "hosts_jvm"),
    Kind("clock_drift", 1, _clock("clock_drift"), "hosts_jvm"),
    Kind("clock_strobe", 1, _clock("clock_strobe"), "hosts_jvm"),
)
GROUP_OPERATOR = Kind("transfer_master", 1, _transfer, "transfer_master")
GROUP_LIGHT: tuple[Kind, ...] = (
    Kind("node latency", 1, _node_latency(below_election_timeout_ms), "proxied_peer_links"),
    Kind("client latency", 1, _client("latency")),
    Kind("client bandwidth", 1, _client("bandwidth")),
    Kind("client reset_peer", 1, _client("reset_peer")),
    Kind("client cut", 1, _client("cut")),
    Kind("full_gc", 1, _full_gc, "jvm"),
)

# The active-passive cluster's: brokers taken out one at a time; the rest never takes one out.
AP_OUT: tuple[Kind, ...] = (
    Kind("kill", 5, _process("kill")),
    Kind("pause", 4, _process("pause")),
)
AP_LIGHT: tuple[Kind, ...] = (
    Kind("node latency", 1, _node_latency(inside_link_heartbeat_ms)),
    Kind("node bandwidth", 1, _ap_node_bandwidth),
    Kind("client latency", 1, _client("latency")),
    Kind("client bandwidth", 1, _client("bandwidth")),
    Kind("client cut", 1, _client("cut")),
    Kind("manager pause", 1, _manager("pause"), "manager"),
    Kind("manager kill", 1, _manager("kill"), "manager"),
)


def available(spec: RunSpec, kinds: tuple[Kind, ...]) -> tuple[Kind, ...]:
    """The kinds this run's target and backend can apply.

    broker_ref's nodes dial each other through the lab's proxies: toxics on node links and
    one-way partitions work. A JVM target's nodes (Broker-J) reach each other at the
    addresses they advertise: no proxy, so node links are cut only by the Docker backend's
    packet filter, and only a JVM has a garbage collector to run. An active-passive cluster
    whose brokers activate themselves has no cluster manager to stop or freeze (nor a
    virtual address: the clients' links are each broker's).

    RabbitMQ's nodes (Erlang VMs) dial each other where their port mapper says: no proxy, no
    garbage collector to run; its node links are cut by packet filters on every backend (on
    local processes as root, each node at its own loopback address), so partitions are drawn.

    On hosts (--backend ssh) every node link goes straight between the machines: cuts,
    partitions and one-way partitions are packet filters, no toxic reaches a node link; netem
    is drawn (its loss and duplication: what every host can make, by netem or by packet
    filter), and clock faults for a JVM target, with its monotonic clock moved too: the only
    way Debian 12's libfaketime (0.9.10) runs a JVM, and a Python node's timed waits hang
    under it whichever way (lab.backends.ssh.facts).
    """
    own_links = spec.target != "broker_ref"  # nodes that dial their peers themselves
    erlang = spec.target == "rabbitmq"
    jvm = own_links and not erlang
    hosts = spec.backend == "ssh"  # node links straight between machines, cut by filters
    have = {
        "": True,
        "proxied_peer_links": not own_links and not hosts,
        "cut_peer_links": not own_links or spec.backend == "docker" or hosts or erlang,
        "one_way": not own_links or hosts,
        "jvm": jvm,
        "transfer_master": not erlang,  # RabbitMQ has no command that moves a leader at will
        "hosts": hosts,
        "hosts_jvm": hosts and jvm,
        "manager": not spec.group.active_passive.self_activated,
    }
    return tuple(k for k in kinds if have[k.needs])


def can_cut(spec: RunSpec) -> bool:
    """Whether the run's node links can be cut (an `isolate` could be drawn in a group)."""
    return any(k.name == "isolate" for k in available(spec, GROUP_OUT))


def draw_kind(rng: random.Random, kinds: tuple[Kind, ...]) -> Kind:
    return rng.choices(kinds, weights=[k.weight for k in kinds])[0]
