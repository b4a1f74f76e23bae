"""Scenarios on one node: what a durable store alone promises."""

from __future__ import annotations

import random

from lab.ground.faultops import FaultOp
from lab.ground.spec import RunSpec, Topology, Workload
from lab.judge.prediction import Prediction
from scenarios.base import Scenario, fault_window

__all__ = ["SINGLE_NODE_CRASH"]


def _crash_once(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """kill -9 the node somewhere in the middle third of the run; restart it 1–3 s later."""
    third = spec.workload.duration_s / 3
    at = round(rng.uniform(third, 2 * third - 3.0), 3)
    down = round(rng.uniform(1.0, 3.0), 3)
    return fault_window("kill", "n1", at, down, "f1")


SINGLE_NODE_CRASH = Scenario(
    name="single-node-crash",
    summary="one node, a producer and a consumer; kill -9 the node mid-run, restart it",
    prediction=Prediction(
        text="a durable store acknowledges only what is on disk: no acknowledged message is "
        "lost; messages in flight may be re-sent, so duplicates are allowed",
        loss="none",
        duplicates_allowed=True,
    ),
    schedule=_crash_once,
    topology=Topology(nodes=1),
    workload=Workload(producers=1, consumers=1, rate=200.0, duration_s=12.0),
)
