"""Scenarios of the faults only hosts have (--backend ssh): a node's clock and its network.

The documents promise nothing about clocks or lossy links; these runs are judged by what
always holds: no acknowledged message lost, never two masters at once, and the service back
soon after the last heal (the target's election allowance added). Each fault hits the master
first, then a replica, one node at a time; the clocks move the nodes' monotonic clocks too
(`monotonic = true`: how Debian 12's libfaketime runs a JVM at all; see lab.backends.ssh.facts).

    clock-jump     the master's clock jumps ahead, later a replica's jumps back
    clock-drift    the master's clock runs fast, later a replica's runs slow
    clock-strobe   the master's clock flips between ahead and right every second
    lossy-network  the master's host loses and duplicates what it sends, then a replica's

Each has an active-passive twin (`--mode active-passive`): the same faults on the primary,
then on a backup in sync, judged the same way; a target whose brokers activate themselves
(Artemis) runs it without a cluster manager.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

from lab.ground.faultops import FaultOp
from lab.ground.spec import RunSpec, Topology, Workload
from lab.judge.expectations import ServiceResumed
from lab.judge.prediction import Prediction
from scenarios.active_passive import CLUSTER
from scenarios.active_passive_self import self_cluster
from scenarios.base import Scenario, fault_window, uniform

__all__ = ["CLOCK_DRIFT", "CLOCK_JUMP", "CLOCK_STROBE", "LOSSY_NETWORK"]

HOSTS = ("ssh",)
LOAD = Workload(producers=2, consumers=1, rate=100.0, duration_s=26.0)
Params = dict[str, int | float | str | bool]


def _two_windows(first: Params, second: Params, fault: str) -> Callable[..., tuple[FaultOp, ...]]:
    """`fault` on the master for 5–7 s from 3–4 s, then on a replica for 5–7 s, 2–3 s later."""

    def schedule(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
        at = uniform(rng, 3.0, 4.0)
        length = uniform(rng, 5.0, 7.0)
        later = round(at + length + uniform(rng, 2.0, 3.0), 3)
        return (
            *fault_window(fault, "@master", at, length, "f1", **first),
            *fault_window(fault, "@replica:1", later, uniform(rng, 5.0, 7.0), "f2", **second),
        )

    return schedule


def _prediction(what: str) -> Prediction:
    return Prediction(
        text=f"the documents promise nothing about {what}; what always holds: no acknowledged "
        "message lost (duplicates allowed), never two masters at once, service back within "
        "10 s of the last heal",
        two_masters="forbidden",
        expect=(ServiceResumed("f2:end", within_s=10.0),),
    )


def _scenario(
    name: str, summary: str, what: str, schedule: Callable[..., tuple[FaultOp, ...]]
) -> Scenario:
    group = Scenario(
        name=name,
        summary=summary,
        prediction=_prediction(what),
        schedule=schedule,
        topology=Topology(nodes=3),
        workload=LOAD,
        backends=HOSTS,
    )
    passive = replace(group, group=CLUSTER)
    passive = replace(passive, self_activated=replace(passive, group=self_cluster(CLUSTER)))
    return replace(group, twin=passive)


CLOCK_JUMP = _scenario(
    "clock-jump",
    "hosts: 3 nodes under load; the master's clock jumps 2 min ahead, later a replica's back",
    "a node's clock",
    _two_windows(
        {"offset_s": 120.0, "monotonic": True},
        {"offset_s": -120.0, "monotonic": True},
        "clock_jump",
    ),
)
CLOCK_DRIFT = _scenario(
    "clock-drift",
    "hosts: 3 nodes under load; the master's clock runs 1.5× fast, later a replica's 0.6× slow",
    "a node's clock",
    _two_windows({"rate": 1.5, "monotonic": True}, {"rate": 0.6, "monotonic": True}, "clock_drift"),
)
CLOCK_STROBE = _scenario(
    "clock-strobe",
    "hosts: 3 nodes under load; the master's clock flips 30 s ahead and back every second",
    "a node's clock",
    _two_windows(
        {"delta_s": 30.0, "period_s": 1.0, "monotonic": True},
        {"delta_s": -30.0, "period_s": 1.0, "monotonic": True},
        "clock_strobe",
    ),
)
LOSSY_NETWORK = _scenario(
    "lossy-network",
    "hosts: 3 nodes under load; the master's host loses 20 % and duplicates 10 % of what it "
    "sends, later a replica's",
    "lossy links",
    _two_windows(
        {"loss_pct": 20, "duplicate_pct": 10}, {"loss_pct": 20, "duplicate_pct": 10}, "netem"
    ),
)
