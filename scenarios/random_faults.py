"""`random`: seeded schedules over the lab's whole fault vocabulary, overlapping, that keep the
documents' promise.

    lab run random --seed N                          a replicated group of three
    lab run random --mode active-passive --seed N    an active-passive cluster of three

A schedule is a run of rounds: a fault 1–3 s long (on a node, a role, a link or the cluster
manager), up to two more that start while it lasts, then 1–2.5 s of quiet before the next
round (3–4.5 s after a round that took an active-passive broker out). Every fault is healed
2 s before the load ends. What is drawn, how often and with which parameters is in
random_vocabulary.py; which mixes are drawn is the rule below.

The rule, replicated group. The documents promise no acknowledged loss while a majority can
reach each other and the ack policy waits for it: a commit returns once the master and
quorum − 1 replicas hold it (SIMPLE_MAJORITY; ALL: every replica), and an election needs a
quorum and picks the node with the most recent transaction, so every quorum holds every
acknowledged transaction, as long as its copies last. Under NO_SYNC (the lab's default, for
master and replicas) a copy lives in a process's memory until it is written out (every
0.5 s), and kill -9 takes it away. Hence:

1. At most one node is out at a time (killed or stopped by its operator and not yet back,
   frozen, cut off: isolated, alone across a partition or a one-way partition, or one
   node→node direction broken by a bandwidth or reset toxic). The other two are a majority
   that reaches each other and holds every acknowledged transaction; the next round waits
   1–2.5 s, time for a restarted node to catch up and for the others to write out. Two nodes
   out under NO_SYNC has no promise: a kill takes the only copies of what the other one
   (frozen or cut off) acknowledged, and the two nodes left elect without them. The
   generator does not draw it.
2. When neither sync policy is NO_SYNC (every copy is on disk, or in the OS, when it is
   acknowledged: a kill loses nothing), a second node may be out while the first is: the
   group has no quorum and waits, as the documents say, and loses nothing. Both faults then
   name distinct nodes, never two splits of the node network (each heal would enable links
   the other holds cut), never three nodes out.
3. What takes no node out may overlap anything: latency under the election timeout on a
   node link (every heartbeat still arrives in time), toxics and cuts on client links, and a
   full GC on a JVM target (drawn first in its round, when every node runs). A fault that
   names a role (`@master`, `@replica:N`) may start while only such faults last: nothing
   else is out, so the role names a node of a whole group.
4. transfer_master (the seed's operator action, on a healthy group) is drawn first in its
   round and nothing that takes a node out overlaps it. A graceful stop (the seed's "Node
   Operations": the node leaves the group, and is started again) is drawn first in its round
   only, never while another fault lasts: the lab waits for the node to close (a JVM takes
   seconds), so what its round starts meanwhile is applied late. designate_primary,
   quorum_override and set_priority 0 are never drawn: the documents say they can lose data.

Under ack policy NONE the documents promise nothing against a master's crash (J11's
business): the rule is the same, and such a run may break, as the documents predict.

The rule, active-passive cluster (the C++ broker's active-passive chapter): the manager
promotes only a ready backup, and the primary acknowledges only what every ready backup
holds. So brokers are taken out (kill, pause) one at a time, and the next one 3–4.5 s after
the round, time for the manager to restart (or fence) it and for it to catch up and be a
ready backup again: a ready backup is always there to promote. What never takes a broker
out overlaps freely: latency and a slower but sufficient bandwidth on node links, latency,
bandwidth and cuts of the virtual address (the clients' link; the manager re-enables it
when it moves it), and the cluster manager stopped or frozen (it acts when it is back).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from lab.ground.faultops import FaultOp
from lab.ground.spec import RunSpec, Topology, Workload
from lab.judge.cluster_expectations import ReadyPromoted
from lab.judge.prediction import Prediction
from scenarios.active_passive import CLUSTER
from scenarios.active_passive_self import self_cluster
from scenarios.base import Scenario, fault_window, uniform
from scenarios.random_vocabulary import (
    AP_LIGHT,
    AP_OUT,
    GROUP_LIGHT,
    GROUP_OPERATOR,
    GROUP_OUT,
    MANAGER,
    Draw,
    Kind,
    available,
    draw_kind,
)

__all__ = [
    "RANDOM",
    "RANDOM_ACTIVE_PASSIVE",
    "Weigh",
    "active_passive_schedule",
    "kills_keep_copies",
    "may_overlap",
    "random_schedule",
]

Weigh = Callable[[Kind], float]  # a kind's weight in a draw, instead of its own

FIRST_AT_S = 2.0
LAST_HEAL_BEFORE_END_S = 2.0
SHORTEST_S = 0.5  # a fault clipped shorter than this by the end of the load is not drawn
EXTRAS = (0, 1, 1, 2)  # how many faults start while a round's first one lasts
OUT_EXTRA_CHANCE = 0.4  # that one of them is drawn from what takes a node out
# An active-passive cluster without a primary while a backup is ready: the manager notices
# within a poll and a status timeout (a few seconds) and promotes; a manager that never does
# leaves it so until the run ends, a minute later. 30 s keeps a busy machine's slowness apart.
PROMOTED_WITHIN_S = 30.0


@dataclass(frozen=True)
class _Placed:
    draw: Draw
    start_s: float
    length_s: float

    @property
    def end_s(self) -> float:
        return self.start_s + self.length_s


def kills_keep_copies(spec: RunSpec) -> bool:
    """Whether every acknowledged copy is out of the process (no NO_SYNC policy)."""
    return "NO_SYNC" not in (spec.durability.master_sync, spec.durability.replica_sync)


def may_overlap(draw: Draw, lasting: list[Draw], spec: RunSpec) -> bool:
    """Whether `draw` may start while the faults `lasting` last (the module's rule)."""
    if any(other.target == draw.target for other in lasting):
        return False  # one fault per node, link or label at a time
    if draw.effect == "light":
        return draw.fault != "full_gc"  # its node must run: first in its round only
    if draw.fault == "graceful_stop":
        return False  # the nemesis waits for the node to close: first in its round only
    if draw.effect == "operator":
        return False
    outs = [other for other in lasting if other.effect != "light"]
    if not outs:
        return True  # nothing else out: a role names a node of a whole group
    if draw.names_a_role:
        return False  # with a node out, a role could name it, or wait on an election
    if not kills_keep_copies(spec) or len(outs) > 1:
        return False  # two out under NO_SYNC: no promise; three out: never
    (first,) = outs
    if first.effect == "operator" or first.names_a_role or (draw.split and first.split):
        return False
    return not set(draw.nodes) & set(first.nodes)


def _weighed(kinds: tuple[Kind, ...], weigh: Weigh | None) -> tuple[Kind, ...]:
    return kinds if weigh is None else tuple(replace(k, weight=weigh(k)) for k in kinds)


def _rounds(
    spec: RunSpec,
    rng: random.Random,
    first: tuple[Kind, ...],
    extra_pools: tuple[tuple[Kind, ...], tuple[Kind, ...]],
    quiet_s: tuple[tuple[float, float], tuple[float, float]],
    weigh: Weigh | None = None,
) -> tuple[FaultOp, ...]:
    """The schedule: rounds of a first fault drawn from `first` and up to two drawn from the
    pools (out, light) that start while it lasts, each kept only when `may_overlap`; then a
    quiet time drawn from `quiet_s` (after a round with / without a fault that takes a node
    out). `weigh`: each kind's weight instead of its own (a guided campaign's)."""
    last = spec.workload.duration_s - LAST_HEAL_BEFORE_END_S
    first = _weighed(first, weigh)
    outs, lights = (_weighed(pool, weigh) for pool in extra_pools)
    ops: list[FaultOp] = []
    at = FIRST_AT_S + uniform(rng, 0.0, 1.0)
    number = 1
    while True:
        length = uniform(rng, 1.0, 3.0)
        if at + length > last:
            break
        placed = [_Placed(draw_kind(rng, first).draw(spec, rng, True), at, length)]
        for _ in range(rng.choice(EXTRAS)):
            pool = outs if outs and rng.random() < OUT_EXTRA_CHANCE else lights
            draw = draw_kind(rng, pool).draw(spec, rng, False)
            start = uniform(rng, at + 0.1, at + length - 0.1)
            extra = min(uniform(rng, 1.0, 3.0), round(last - start, 3))
            if extra >= SHORTEST_S and may_overlap(draw, [p.draw for p in placed], spec):
                placed.append(_Placed(draw, start, extra))
        for p in sorted(placed, key=lambda p: p.start_s):
            ops.extend(
                fault_window(
                    p.draw.fault,
                    p.draw.target,
                    p.start_s,
                    p.length_s,
                    f"f{number}",
                    **p.draw.params,
                )
            )
            number += 1
        took_out = any(p.draw.effect != "light" for p in placed)
        low, high = quiet_s[0] if took_out else quiet_s[1]
        at = round(max(p.end_s for p in placed) + uniform(rng, low, high), 3)
    return tuple(sorted(ops, key=lambda op: op.at_s))


def random_schedule(
    spec: RunSpec, rng: random.Random, weigh: Weigh | None = None
) -> tuple[FaultOp, ...]:
    """The replicated group's schedule (the module's rule, replicated group)."""
    outs = available(spec, GROUP_OUT)
    lights = available(spec, GROUP_LIGHT)
    first = (*outs, *available(spec, (GROUP_OPERATOR,)), *lights)
    extra_lights = tuple(k for k in lights if k.name != "full_gc")
    return _rounds(spec, rng, first, (outs, extra_lights), ((1.0, 2.5), (1.0, 2.5)), weigh)


def active_passive_schedule(
    spec: RunSpec, rng: random.Random, weigh: Weigh | None = None
) -> tuple[FaultOp, ...]:
    """Brokers killed or paused one at a time, 3–4.5 s after the last round that took one out
    (long enough for the manager to restart or fence it and for it to catch up and be a ready
    backup again, so a ready backup is always there to promote); faults that take no broker out
    overlap them and each other."""
    lights = available(spec, AP_LIGHT)
    pools = ((), lights)
    return _rounds(spec, rng, (*AP_OUT, *lights), pools, ((3.0, 4.5), (1.0, 2.5)), weigh)


_RANDOM_ACTIVE_PASSIVE = Scenario(
    name="random",
    summary="a seeded random schedule on an active-passive cluster of 3: brokers killed or "
    "paused one at a time, overlapped by slow links, cuts of the virtual address and the "
    "cluster manager stopped or frozen; clients on the virtual address",
    prediction=Prediction(
        text="one broker out at a time leaves a ready backup for the manager to promote, "
        "and the primary acknowledges only what every ready backup holds: no acknowledged "
        "message lost whatever the schedule; duplicates allowed; never without a primary "
        f"for over {PROMOTED_WITHIN_S:g} s while a backup is ready",
        two_masters="forbidden",
        expect=(ReadyPromoted(PROMOTED_WITHIN_S, MANAGER),),
    ),
    schedule=active_passive_schedule,
    topology=Topology(nodes=3),
    # One address, wherever the primary is: the manager moves it (the list is C1's).
    workload=Workload(producers=2, consumers=1, rate=100.0, duration_s=24.0, virtual_address=True),
    group=CLUSTER,
)

# Brokers that activate themselves: no manager to act on, no virtual address to move.
RANDOM_ACTIVE_PASSIVE = replace(
    _RANDOM_ACTIVE_PASSIVE,
    self_activated=replace(
        _RANDOM_ACTIVE_PASSIVE,
        summary="a seeded random schedule on an active-passive cluster of 3 whose brokers "
        "activate themselves: brokers killed or paused one at a time, overlapped by slow "
        "links and client link faults",
        prediction=Prediction(
            text="one broker out at a time leaves a ready backup to take over by itself, and "
            "the primary acknowledges only what its backup holds: no acknowledged message "
            "lost whatever the schedule; never two primaries; duplicates allowed",
            two_masters="forbidden",
        ),
        workload=replace(_RANDOM_ACTIVE_PASSIVE.workload, virtual_address=False),
        group=self_cluster(CLUSTER),
    ),
)

RANDOM = Scenario(
    name="random",
    summary="a seeded random schedule of overlapping faults on 3 nodes: kills, pauses, "
    "partitions (one-way too), toxics and cuts on links, master transfers",
    prediction=Prediction(
        text="commits wait for a majority, every quorum holds every acknowledged message, and "
        "no mix destroys its copies (one node out at a time; two only when no copy lives in "
        "memory alone, and then the group waits): no acknowledged message lost whatever the "
        "schedule; duplicates allowed; a master exists only with a quorum, so never two "
        "masters for longer than a master cut off keeps its role",
        two_masters="beyond-lease",
    ),
    schedule=random_schedule,
    topology=Topology(nodes=3),
    workload=Workload(producers=2, consumers=1, rate=100.0, duration_s=18.0),
    twin=RANDOM_ACTIVE_PASSIVE,
)
