"""The Java broker's node operations (Broker-J's HA chapter, "Node Operations",
Lifecycle): a node stopped and started by its operator, not killed.

"Stopping a master node will cause the node to temporarily leave the group. Any messaging
clients will be disconnected [...] The remaining nodes will elect a new master if quorum
number of nodes still remains. Stopping a replica node [...] Providing quorum still exists,
the current master will continue without interruption." And on start: "If the group
already has a master, the node will catch up from the master and then become a replica."
"""

from __future__ import annotations

import random

from lab.ground.faultops import FaultOp
from lab.ground.spec import RunSpec, Topology, Workload
from lab.judge.expectations import LogSeen, RoleAtEnd, ServiceResumed, StoppedCleanly
from lab.judge.prediction import Prediction
from scenarios.base import Scenario, fault_window, uniform

__all__ = ["ROLLING_RESTART"]

STEP_S = 7.0  # from one node's stop to the next one's: down ~3 s, then ~4 s to rejoin
STOPPING_S = 5.0  # a gap beginning this long after SIGTERM is the stop's (a JVM closes slowly)


def _rolling_restart(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """Each node in turn, the last by name first (the first master last): stopped
    gracefully 3–4 s in and every 7 s after (plus a slower target's restart allowance),
    down 2.5–3.5 s, started again."""
    first = uniform(rng, 3.0, 4.0)
    names = tuple(reversed(spec.topology.node_names))
    return tuple(
        op
        for i, node in enumerate(names)
        for op in fault_window(
            "graceful_stop", node, first + i * STEP_S, uniform(rng, 2.5, 3.5), f"f{i + 1}"
        )
    )


ROLLING_RESTART = Scenario(
    name="rolling-restart",
    summary="node operations: 3 nodes under load; stop each node gracefully in turn, start it",
    prediction=Prediction(
        text="a stopped node leaves the group (the others say so); the master continues "
        "while a replica is away, and when the master is stopped the others elect a new one; "
        "a started node catches up and rejoins as a replica; no acknowledged message lost "
        "(duplicates allowed); the service gaps are measured",
        two_masters="forbidden",
        expect=(
            LogSeen("HA-1006", after="f1:start"),  # Left : Node : ...
            LogSeen("HA-1005", after="f1:end"),  # Joined : Node : ...
            ServiceResumed("f1:start", within_s=5.0, begins_within_s=STOPPING_S),
            ServiceResumed("f2:start", within_s=5.0, begins_within_s=STOPPING_S),
            ServiceResumed("f3:start", within_s=5.0, begins_within_s=STOPPING_S),
            RoleAtEnd("f3", "REPLICA"),
            *(StoppedCleanly(f"f{i}") for i in (1, 2, 3)),
        ),
    ),
    schedule=_rolling_restart,
    topology=Topology(nodes=3),
    # Consumed along the load: a queue held back until the end makes a new Broker-J master
    # recover it before serving (8,961 messages took 8.6 s), a gap of the workload's making.
    workload=Workload(producers=2, consumers=1, rate=100.0, duration_s=26.0),
    paced=True,  # a JVM's stop, start and rejoin take longer: its allowance between steps
)
