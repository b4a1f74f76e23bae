"""`random`: a seeded schedule of kills, pauses and partitions on a group of three.

One fault at a time, each 1–3 s long with 1–2.5 s between them, on a node picked by
name or by role (`@master`, `@replica:N`). Every fault leaves a majority of the group
able to reach each other once it is healed, and the default durability waits for a
majority, so the documents predict no acknowledged loss whatever the seed.

    lab run random --seed N
"""

from __future__ import annotations

import random

from lab.ground.faultops import FaultOp
from lab.ground.spec import RunSpec, Topology, Workload
from lab.judge.prediction import Prediction
from scenarios.active_passive import CLUSTER
from scenarios.base import Scenario, fault_window, uniform

__all__ = ["RANDOM", "RANDOM_ACTIVE_PASSIVE", "active_passive_schedule", "random_schedule"]

KINDS = ("kill", "pause", "partition", "isolate")
FIRST_AT_S = 2.0
LAST_HEAL_BEFORE_END_S = 2.0


def _target(rng: random.Random, nodes: tuple[str, ...]) -> str:
    return rng.choice((*nodes, "@master", "@replica:1", "@replica:2"))


def random_schedule(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    nodes = spec.topology.node_names
    last = spec.workload.duration_s - LAST_HEAL_BEFORE_END_S
    ops: list[FaultOp] = []
    at = FIRST_AT_S + uniform(rng, 0.0, 1.0)
    number = 1
    while True:
        length = uniform(rng, 1.0, 3.0)
        if at + length > last:
            break
        kind = rng.choice(KINDS)
        fault_id = f"f{number}"
        if kind == "partition":
            alone = rng.choice(nodes)
            rest = ",".join(n for n in nodes if n != alone)
            ops.extend(
                fault_window("partition", "group", at, length, fault_id, sides=f"{alone}|{rest}")
            )
        else:
            ops.extend(fault_window(kind, _target(rng, nodes), at, length, fault_id))
        at = round(at + length + uniform(rng, 1.0, 2.5), 3)
        number += 1
    return tuple(ops)


AP_KINDS = ("kill", "pause")


def active_passive_schedule(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """One kill or pause at a time, on a broker or a role, 1–3 s each, 3–4.5 s apart: long
    enough for the manager to restart (or fence) a broker and for it to catch up and be a
    ready backup again before the next fault, so a ready backup is always there to promote."""
    nodes = spec.topology.node_names
    last = spec.workload.duration_s - LAST_HEAL_BEFORE_END_S
    ops: list[FaultOp] = []
    at = FIRST_AT_S + uniform(rng, 0.0, 1.0)
    number = 1
    while True:
        length = uniform(rng, 1.0, 3.0)
        if at + length > last:
            break
        kind = rng.choice(AP_KINDS)
        ops.extend(fault_window(kind, _target(rng, nodes), at, length, f"f{number}"))
        at = round(at + length + uniform(rng, 3.0, 4.5), 3)
        number += 1
    return tuple(ops)


RANDOM_ACTIVE_PASSIVE = Scenario(
    name="random",
    summary="a seeded random schedule of kills and pauses on an active-passive cluster of 3, "
    "clients on its virtual address",
    prediction=Prediction(
        text="one broker failure at a time leaves a ready backup for the manager to promote, "
        "and the primary acknowledges only what every ready backup holds: no acknowledged "
        "message lost whatever the schedule; duplicates allowed",
        two_masters="forbidden",
    ),
    schedule=active_passive_schedule,
    topology=Topology(nodes=3),
    # One address, wherever the primary is: the manager moves it (the list is C1's).
    workload=Workload(producers=2, consumers=1, rate=100.0, duration_s=24.0, virtual_address=True),
    group=CLUSTER,
)

RANDOM = Scenario(
    name="random",
    summary="a seeded random schedule of kills, pauses and partitions on 3 nodes",
    prediction=Prediction(
        text="one fault at a time leaves a quorum, and commits wait for a majority: no "
        "acknowledged message lost whatever the schedule; duplicates allowed",
    ),
    schedule=random_schedule,
    topology=Topology(nodes=3),
    workload=Workload(producers=2, consumers=1, rate=100.0, duration_s=18.0),
    twin=RANDOM_ACTIVE_PASSIVE,
)
