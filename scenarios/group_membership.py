"""The group's membership under load (Broker-J's HA chapter, "Creating a group" and
"Node Operations", Lifecycle): a node added to the running group, a replica deleted from it.

Adding: "creating subsequent nodes referencing the first node so the nodes can introduce
themselves and gradually the group is built up [...] It is also possible to add nodes to an
existing group using the procedure described above." The new node names a helper (n1) and
its address is among the group's permitted nodes; "if the group already has a master, the
node will catch up from the master and then become a replica".

Deleting: "Deleting a node permanently removes the node from the group [...] The names of
deleted virtualhost node cannot be reused within a group." The lab stops the replica as an
operator does, has the master remove it, and later starts it again under its old name: the
group must refuse it (it never becomes a replica or a master).
"""

from __future__ import annotations

import random

from lab.ground.faultops import FaultOp
from lab.ground.spec import RunSpec, Topology, Workload
from lab.judge.expectations import (
    Expectation,
    LogSeen,
    RoleAtEnd,
    RoleNever,
    ServiceContinued,
)
from lab.judge.prediction import Prediction
from scenarios.base import Scenario, fault_window, uniform

__all__ = ["GROW_GROUP", "REMOVE_REPLICA"]

SPARE = "n3"
MAX_GAP_S = 2.0  # a membership change under load leaves no gap in the service above this
REFUSED = "REF-1011"  # broker_ref's "Removed from group" on a node whose name was removed
UNABLE_TO_START = "BRK-1019"  # Broker-J: "some services were unable to start" (ERRORED)


def _grow(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """The spare added 3–4 s into the load (nothing to heal: the window's end, 2 s later,
    only marks a moment, as transfer-master's)."""
    return fault_window("add_node", SPARE, uniform(rng, 3.0, 4.0), 2.0, "f1")


GROW_GROUP = Scenario(
    name="grow-group",
    summary="node operations: a group of 2 under load; a third node added, joins and catches up",
    prediction=Prediction(
        text="the master admits the new node (HA-1003 on it), which catches up and is a "
        "replica at the end; the service goes on while it joins; no acknowledged message "
        "lost (duplicates allowed); never two masters",
        two_masters="forbidden",
        expect=(
            LogSeen("HA-1003", node="master@f1", after="f1:start"),  # Added : Node : 'n3'
            RoleAtEnd(SPARE, "REPLICA"),
            ServiceContinued("f1:start", None, max_gap_s=MAX_GAP_S),
        ),
    ),
    schedule=_grow,
    topology=Topology(nodes=3, spares=(SPARE,)),
    workload=Workload(producers=2, consumers=1, rate=100.0, duration_s=10.0),
)


def _remove(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """The first replica removed 3–4 s in; the same node started again 4–5 s later."""
    removed = uniform(rng, 3.0, 4.0)
    again = round(removed + uniform(rng, 4.0, 5.0), 3)
    return (
        *fault_window("remove_node", "@replica:1", removed, 2.0, "f1"),
        *fault_window("add_node", "@removed", again, 2.0, "f2"),
    )


def _remove_prediction(spec: RunSpec) -> Prediction:
    """Each target also says, in its own words, why the node started again does not serve:
    broker_ref writes REF-1011 (its own code) and reports DETACHED; Broker-J's JE refuses
    the handshake ("Node: n2(3) is no longer a member of the group. It was explicitly
    removed."), its virtual host node is ERRORED and the broker writes BRK-1019.

    HA-1004 is asked of any node: broker_ref's master writes it; Broker-J's master writes
    HA-1002 (Delete : "n2" : SUCCESS) for the deletion it made and the other members
    HA-1004."""
    own: tuple[Expectation, ...] = ()
    if spec.target == "broker_ref":
        own = (LogSeen(REFUSED, node="f2", after="f2:start"), RoleAtEnd("f2", "DETACHED"))
    elif spec.target == "qpid-broker-j":
        own = (LogSeen(UNABLE_TO_START, node="f2", after="f2:start"),)
    return Prediction(
        text="the replica stopped and removed leaves the group for good (HA-1004); the "
        "master goes on; started again under its old name the node is refused and never "
        "becomes a replica or a master; no acknowledged message lost (duplicates allowed); "
        "never two masters",
        two_masters="forbidden",
        expect=(
            LogSeen("HA-1004", after="f1:start"),  # Removed : Node : 'n2' (…)
            ServiceContinued("f1:start", None, max_gap_s=MAX_GAP_S),
            RoleNever("f2", ("MASTER", "REPLICA"), after="f2:start"),
            *own,
        ),
    )


REMOVE_REPLICA = Scenario(
    name="remove-replica",
    summary="node operations: 3 nodes under load; a replica removed, then started again",
    prediction=_remove_prediction(RunSpec("remove-replica", 0)),
    predict=_remove_prediction,
    schedule=_remove,
    topology=Topology(nodes=3),
    workload=Workload(producers=2, consumers=1, rate=100.0, duration_s=12.0),
)
