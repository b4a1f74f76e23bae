"""The Java broker's groups of two (the Java broker 0.18 HA guide): J2–J5 of docs/scenarios.md.

A group of two has no majority without both nodes, so a lone node serves only when it
is the designated primary. J3–J5 designate the master primary from the start of the
load (the 0.18 document's advice: "the node that normally fulfils the role of master
is set true"), as an operator fault whose heal clears it at the end.
"""

from __future__ import annotations

import random

from lab.ground.faultops import FaultOp
from lab.ground.spec import GroupSettings, RunSpec, Topology, Workload
from lab.judge.expectations import (
    LogSeen,
    RoleAtEnd,
    ServiceContinued,
    ServiceResumed,
    ServiceStopped,
)
from lab.judge.prediction import Prediction
from scenarios.base import Scenario, fault_window, uniform

__all__ = [
    "PARTITION_AND_RECOVERY",
    "REPLICA_FAILURE",
    "SPLIT_BRAIN",
    "TWO_NODE_MASTER_FAILURE",
]

TWO = Topology(nodes=2)
LOAD = Workload(producers=2, consumers=1, rate=100.0, duration_s=14.0)


def _designated_master(spec: RunSpec, fault_id: str) -> tuple[FaultOp, FaultOp]:
    """designatedPrimary true on the master from 0.5 s to 1 s before the end."""
    end = spec.workload.duration_s - 1.0
    return fault_window("designate_primary", "@master", 0.5, end - 0.5, fault_id)


def _master_failure(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """Kill the master; 3–4 s later designate the survivor primary; restart the old master;
    clear the designation once both are back."""
    kill_at = uniform(rng, 3.0, 5.0)
    designate_at = kill_at + uniform(rng, 3.0, 4.0)
    back_at = designate_at + uniform(rng, 2.0, 3.0)
    clear_at = back_at + uniform(rng, 1.5, 2.0)
    return (
        *fault_window("kill", "@master", kill_at, back_at - kill_at, "f1"),
        *fault_window("designate_primary", "@replica", designate_at, clear_at - designate_at, "f2"),
    )


TWO_NODE_MASTER_FAILURE = Scenario(
    name="two-node-master-failure",
    summary="J2: 2 nodes; kill the master; an operator designates the replica primary",
    prediction=Prediction(
        text="the replica cannot tell a partition from a crash, so it does not make itself "
        "master: service stops; designated primary, it becomes master; the old master "
        "rejoins as a replica; no acknowledged message lost",
        two_masters="forbidden",
        expect=(
            ServiceStopped("f1:start", "f2:start"),
            LogSeen("MST-1006", node="f2", after="f2:start"),
            ServiceResumed("f2:start", within_s=5.0),
            RoleAtEnd("f1", "REPLICA"),
        ),
    ),
    schedule=_master_failure,
    topology=TWO,
    workload=Workload(producers=2, consumers=1, rate=100.0, duration_s=18.0),
)


def _replica_failure(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """The master designated primary; kill the replica 3–5 s in; restart it 3–4 s later."""
    return (
        *_designated_master(spec, "f1"),
        *fault_window("kill", "@replica", uniform(rng, 3.0, 5.0), uniform(rng, 3.0, 4.0), "f2"),
    )


REPLICA_FAILURE = Scenario(
    name="replica-failure",
    summary="J3: 2 nodes, the master designated primary; kill the replica, restart it",
    prediction=Prediction(
        text="designated primary, the master continues solo and clients are uninterrupted; "
        "the restarted replica catches up and is ready again; no acknowledged message lost",
        two_masters="forbidden",
        expect=(
            ServiceContinued("f2:start", "f2:end"),
            RoleAtEnd("f2", "REPLICA"),
            RoleAtEnd("master@f2", "MASTER"),
        ),
    ),
    schedule=_replica_failure,
    topology=TWO,
    workload=LOAD,
)


def _partition(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """The master designated primary; cut the link between the nodes 3–5 s in, for 3–4 s."""
    return (
        *_designated_master(spec, "f1"),
        *fault_window(
            "partition",
            "group",
            uniform(rng, 3.0, 5.0),
            uniform(rng, 3.0, 4.0),
            "f2",
            sides="@master|@replica",
        ),
    )


PARTITION_AND_RECOVERY = Scenario(
    name="partition-and-recovery",
    summary="J4: 2 nodes, the master designated primary; cut the link between them, heal it",
    prediction=Prediction(
        text="as for a replica failure: the designated master continues solo, clients "
        "uninterrupted; after the heal the replica catches up; no acknowledged message lost",
        two_masters="forbidden",
        expect=(
            ServiceContinued("f2:start", "f2:end"),
            RoleAtEnd("master@f2", "MASTER"),
        ),
    ),
    schedule=_partition,
    topology=TWO,
    workload=LOAD,
)


def _split_brain(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """Partition; the master (designated primary) works solo; clients lose it for a moment
    while an operator wrongly designates the replica primary, so they go on with the second
    master; the partition heals; the designations are cleared."""
    cut_at = uniform(rng, 2.5, 3.5)
    clients_away = cut_at + uniform(rng, 1.5, 2.0)
    designate_at = clients_away + 0.3
    clients_back = designate_at + uniform(rng, 1.0, 1.5)
    heal_at = uniform(rng, 9.5, 10.5)
    end = spec.workload.duration_s - 1.0
    return (
        *_designated_master(spec, "f1"),
        *fault_window(
            "partition", "group", cut_at, heal_at - cut_at, "f2", sides="@master|@replica"
        ),
        *fault_window("cut", "client_to_@master", clients_away, clients_back - clients_away, "f3"),
        *fault_window(
            "designate_primary", "@replica", designate_at, end - designate_at - 0.5, "f4"
        ),
    )


SPLIT_BRAIN = Scenario(
    name="split-brain",
    summary="J5: 2 nodes; cut the link; an operator wrongly designates the replica primary",
    prediction=Prediction(
        text="both nodes act as masters and accept work independently: the lab must see two "
        "masters at once and the acknowledged messages that one side loses (HA-1014); "
        "there is no automatic recovery",
        loss="detected",
        two_masters="expected",
        expect=(LogSeen("HA-1014", after="f2:end"),),
    ),
    schedule=_split_brain,
    topology=TWO,
    workload=Workload(
        producers=2,
        consumers=1,
        rate=100.0,
        duration_s=14.0,
        consume_during_load=False,
        spread_producers=True,
    ),
    # JE makes a designated primary master alone only after a failed election round and a
    # second one, each waiting out the silent peer: with its defaults (10 s open and read
    # timeouts, electionsPrimaryRetries 2) the partition heals first, the replica never
    # becomes master, and the two designated primaries meet at the heal (JE throws the
    # replica out: "Conflicting Primary designations"). Broker-J's own HA tests set the
    # retries to 0; short timeouts let both rounds fit in the partition.
    group=GroupSettings(
        target_context={
            "qpid-broker-j": {
                "je.rep.electionsPrimaryRetries": "0",
                "je.rep.electionsOpenTimeout": "500 ms",
                "je.rep.electionsReadTimeout": "500 ms",
            }
        },
    ),
)
