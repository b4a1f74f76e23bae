"""J11 of docs/scenarios.md: a master kill -9 under load, under any durability triplet.

    lab run durability-matrix --durability NO_SYNC,NO_SYNC,NONE [--no-coalescing]

Every node→node link is slowed (150 ms each way) for the whole load, so a replica
always trails the master by a moment. The master then crashes as a machine does, its
network with it: its node links are cut (which drops what the proxies still held for
the replicas) and 50 ms later it is killed -9; links come back just before it restarts.
Under acknowledgement policy NONE the master acknowledged what no replica has, and it
is lost (the documents: "after the commit returns … neither guaranteed to be written to
the disk of the master nor received by any of the replicas"). Under SIMPLE_MAJORITY and
ALL the acknowledgement waits for the replicas, so nothing acknowledged is lost.
Consumers drain only at the end, so what a new master never had cannot be consumed from
the old one first. (A kill -9 alone loses nothing here: the kernel and the proxies still
deliver what the master had written to its sockets.)
"""

from __future__ import annotations

import random
from itertools import permutations

from lab.ground.faultops import FaultOp
from lab.ground.spec import RunSpec, Topology, Workload
from lab.ground.topology import node_link
from lab.judge.expectations import Expectation, LogSeen, ServiceResumed
from lab.judge.prediction import Prediction
from scenarios.base import Scenario, fault_window, uniform

__all__ = ["DURABILITY_MATRIX", "matrix_prediction"]

LATENCY_MS = 150


def _kill_under_lag(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    end = spec.workload.duration_s - 1.0
    slow_from = uniform(rng, 0.5, 1.0)
    lags = tuple(
        op
        for i, (a, b) in enumerate(permutations(spec.topology.node_names, 2), start=1)
        for op in fault_window(
            "latency",
            node_link(a, b),
            slow_from,
            end - slow_from,
            f"l{i}",
            latency_ms=LATENCY_MS,
            jitter_ms=0,
        )
    )
    crash_at = uniform(rng, 5.0, 7.0)
    down = uniform(rng, 4.0, 5.0)  # long enough for the others to elect a master
    return (
        *lags,
        *fault_window("isolate", "@master", crash_at, down - 0.1, "f1"),
        *fault_window("kill", "@master", crash_at + 0.05, down, "f2"),
    )


def matrix_prediction(spec: RunSpec) -> Prediction:
    """NONE: acknowledged loss on failover, which the lab must detect; otherwise none."""
    durability = spec.durability
    setting = (
        f"{durability.triplet}, coalescing-sync {'on' if durability.coalescing_sync else 'off'}"
    )
    if durability.ack_policy == "NONE":
        return Prediction(
            text=f"{setting}: acknowledgement policy NONE may lose acknowledged messages on "
            "failover; with the replicas trailing the master, the lab must see the loss",
            loss="detected",
            expect=(LogSeen("MST-1006", after="f2:start"),),
        )
    # ALL needs every replica, so commits wait until the killed node is back. Otherwise an
    # election restores service; with 150 ms on every node link each of its round trips
    # (pre-vote, vote) is slow, hence more time than the other scenarios allow.
    resumed: Expectation = (
        ServiceResumed("f2:end", within_s=8.0)
        if durability.ack_policy == "ALL"
        else ServiceResumed("f2:start", within_s=8.0)
    )
    return Prediction(
        text=f"{setting}: the acknowledgement waits for the replicas ({durability.ack_policy}), "
        "so a master kill -9 loses no acknowledged message; duplicates allowed",
        two_masters="forbidden",
        expect=(LogSeen("MST-1006", after="f2:start"), resumed),
    )


DURABILITY_MATRIX = Scenario(
    name="durability-matrix",
    summary="J11: kill -9 the master under a durability triplet (--durability, --coalescing)",
    prediction=matrix_prediction(RunSpec(scenario="durability-matrix", seed=0)),
    predict=matrix_prediction,
    schedule=_kill_under_lag,
    topology=Topology(nodes=3),
    workload=Workload(
        producers=2, consumers=1, rate=100.0, duration_s=16.0, consume_during_load=False
    ),
)
