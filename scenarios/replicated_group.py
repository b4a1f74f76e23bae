"""The Java broker's replicated groups of three (Broker-J's HA chapter, "Behaviour of the Group"):
J1, J6–J10 and J13 of docs/scenarios.md.

Targets name roles (`@master`, `@replica:1`), resolved when each fault is applied; the
predictions refer to the nodes a fault hit (`f1`) and to the master when it began
(`master@f1`). Consumers that only drain at the end leave every acknowledged message in
the queue until then, so a loss cannot hide behind a fast consumer.
"""

from __future__ import annotations

import random

from lab.ground.faultops import FaultOp
from lab.ground.spec import Durability, GroupSettings, RunSpec, Topology, Workload
from lab.judge.expectations import (
    LogSeen,
    RoleAtEnd,
    ServiceContinued,
    ServiceResumed,
    ServiceStopped,
)
from lab.judge.j_expectations import (
    AcknowledgedByNewMaster,
    ElectedMostRecent,
    InFlightSendsSettled,
)
from lab.judge.prediction import Prediction
from scenarios.base import Scenario, fault_window, uniform

__all__ = [
    "MASTER_FAILURE",
    "NEVER_PRIORITY_LOSS",
    "QUORUM_LOSS",
    "QUORUM_OVERRIDE",
    "REJOIN_AFTER_RETENTION",
    "REPLICA_GC_STALL",
    "REPLICA_GC_STALL_ALL",
    "TRANSFER_MASTER",
]

THREE = Topology(nodes=3)
LOAD = Workload(producers=2, consumers=1, rate=100.0, duration_s=16.0)
HELD_BACK = Workload(
    producers=2, consumers=1, rate=100.0, duration_s=16.0, consume_during_load=False
)


def _master_failure(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """kill -9 the master 4–7 s in; restart it 2–4 s later."""
    return fault_window("kill", "@master", uniform(rng, 4.0, 7.0), uniform(rng, 2.0, 4.0), "f1")


MASTER_FAILURE = Scenario(
    name="master-failure",
    summary="J1: 3 nodes under load; kill -9 the master, restart it later",
    prediction=Prediction(
        text="quorum remains, so the replicas elect the one with the most recent transaction; "
        "clients fail over; no acknowledged message lost (duplicates allowed); the old master "
        "rejoins as a replica",
        two_masters="forbidden",
        expect=(
            LogSeen("MST-1006", after="f1:start"),
            ElectedMostRecent("f1"),
            ServiceResumed("f1:start", within_s=5.0),
            RoleAtEnd("f1", "REPLICA"),
        ),
    ),
    schedule=_master_failure,
    topology=THREE,
    workload=LOAD,
)


def _quorum_loss(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """Kill a replica, then the master: one node is left. The replica returns first."""
    replica_at = uniform(rng, 3.0, 4.0)
    master_at = replica_at + uniform(rng, 1.5, 2.0)
    replica_back = master_at + uniform(rng, 3.0, 4.0)
    master_back = replica_back + uniform(rng, 1.5, 2.0)
    return (
        *fault_window("kill", "@replica:1", replica_at, replica_back - replica_at, "f1"),
        *fault_window("kill", "@master", master_at, master_back - master_at, "f2"),
    )


QUORUM_LOSS = Scenario(
    name="quorum-loss",
    summary="J6: 3 nodes; kill a replica, then the master; bring one back, then the other",
    prediction=Prediction(
        text="with one node of three left there is no quorum: it cannot elect itself, the "
        "virtual host is unavailable; when a node returns an election restores service; "
        "no acknowledged message lost; in-flight transactions fail: a send in flight at the "
        "master's kill is never acknowledged and then lost",
        two_masters="forbidden",
        expect=(
            ServiceStopped("f2:start", "f1:end"),
            ServiceResumed("f1:end", within_s=5.0),
            InFlightSendsSettled("f2"),
        ),
    ),
    schedule=_quorum_loss,
    topology=THREE,
    workload=LOAD,
)


def _quorum_override(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """As quorum-loss; then quorumOverride 1 on the survivor; the others return; revert to 0.

    The replica goes first, so every commit after it needed the survivor's acknowledgement:
    the survivor holds the latest acknowledged transaction, the documents' condition."""
    replica_at = uniform(rng, 2.5, 3.5)
    master_at = replica_at + uniform(rng, 1.5, 2.0)
    override_at = master_at + uniform(rng, 2.0, 2.5)
    replica_back = override_at + uniform(rng, 3.0, 4.0)
    master_back = replica_back + uniform(rng, 1.0, 1.5)
    revert_at = master_back + uniform(rng, 1.0, 1.5)
    return (
        *fault_window("kill", "@replica:1", replica_at, replica_back - replica_at, "f1"),
        *fault_window("kill", "@master", master_at, master_back - master_at, "f2"),
        *fault_window(
            "quorum_override", "@replica:1", override_at, revert_at - override_at, "f3", value=1
        ),
    )


QUORUM_OVERRIDE = Scenario(
    name="quorum-override",
    summary="J7: as quorum-loss, then quorumOverride 1 on the survivor; revert as nodes return",
    prediction=Prediction(
        text="quorumOverride 1 lets the survivor elect itself: service is restored from the "
        "singleton; reverted to 0 as the nodes return; no acknowledged loss, the survivor "
        "holding the latest transaction",
        two_masters="forbidden",
        expect=(
            ServiceStopped("f2:start", "f3:start"),
            ServiceResumed("f3:start", within_s=5.0),
            LogSeen("MST-1006", node="f3", after="f3:start"),
        ),
    ),
    schedule=_quorum_override,
    topology=THREE,
    workload=LOAD,
)


def _never_priority(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """replica-2 gets priority Never; replica-1 stalls (a full GC) while the master and
    replica-2 acknowledge work; the master is killed; replica-1 resumes."""
    end = spec.workload.duration_s - 1.0
    pause_at = uniform(rng, 2.5, 3.5)
    kill_at = pause_at + uniform(rng, 2.5, 3.0)
    resume_at = kill_at + uniform(rng, 0.4, 0.6)
    master_back = kill_at + uniform(rng, 4.0, 5.0)
    return (
        *fault_window("set_priority", "@replica:2", 0.5, end - 0.5, "f1", value=0),
        *fault_window("pause", "@replica:1", pause_at, resume_at - pause_at, "f2"),
        *fault_window("kill", "@master", kill_at, master_back - kill_at, "f3"),
    )


NEVER_PRIORITY_LOSS = Scenario(
    name="never-priority-loss",
    summary="J8: replica-2 priority Never, replica-1 stalled; kill the master; resume replica-1",
    prediction=Prediction(
        text="replica-1 is elected though replica-2 (Never) had the most recent transaction: "
        "acknowledged transactions are lost, and the loss is reported (HA-1014)",
        loss="detected",
        expect=(
            LogSeen("MST-1006", node="f2", after="f2:end"),
            LogSeen("HA-1014", after="f3:start"),
        ),
    ),
    schedule=_never_priority,
    topology=THREE,
    workload=HELD_BACK,
)


def _transfer(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """Move mastership to the first replica 4–7 s in (nothing to heal)."""
    return fault_window("transfer_master", "@replica:1", uniform(rng, 4.0, 7.0), 2.0, "f1")


TRANSFER_MASTER = Scenario(
    name="transfer-master",
    summary="J9: 3 nodes under load; transfer mastership to a chosen replica",
    prediction=Prediction(
        text="suspended transactions abort, clients reconnect to the new master, the old "
        "master becomes a replica; no acknowledged message lost",
        expect=(
            RoleAtEnd("f1", "MASTER"),
            RoleAtEnd("master@f1", "REPLICA"),
            ServiceResumed("f1:start", within_s=5.0),
            AcknowledgedByNewMaster("f1", after="f1:start"),
        ),
    ),
    schedule=_transfer,
    topology=THREE,
    workload=LOAD,
)


def _gc_stall(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """Freeze a replica 4–6 s in for 2.5–3.5 s: well past the election timeout (0.6 s) and
    within the commits' wait for replicas (5 s)."""
    return fault_window("pause", "@replica:1", uniform(rng, 4.0, 6.0), uniform(rng, 2.5, 3.5), "f1")


REPLICA_GC_STALL = Scenario(
    name="replica-gc-stall",
    summary="J10: pause one replica past the heartbeat timeout (SIMPLE_MAJORITY), resume it",
    prediction=Prediction(
        text="with SIMPLE_MAJORITY the master goes on with the other replica; no "
        "acknowledged message lost",
        two_masters="forbidden",
        expect=(
            ServiceContinued("f1:start", "f1:end", max_gap_s=1.5),
            RoleAtEnd("f1", "REPLICA"),
        ),
    ),
    schedule=_gc_stall,
    topology=THREE,
    workload=LOAD,
)

REPLICA_GC_STALL_ALL = Scenario(
    name="replica-gc-stall-all",
    summary="J10 with ALL: pause one replica past the heartbeat timeout, resume it",
    prediction=Prediction(
        text="with ALL every commit needs the frozen replica: commits wait while it is "
        "paused (unavailability, measured) and complete after; no acknowledged message lost",
        two_masters="forbidden",
        expect=(
            ServiceStopped("f1:start", "f1:end"),
            ServiceResumed("f1:end", within_s=3.0),
            RoleAtEnd("f1", "REPLICA"),
        ),
    ),
    schedule=_gc_stall,
    topology=THREE,
    workload=LOAD,
    durability=Durability(ack_policy="ALL"),
)

RETENTION_S = 1.5


def _rejoin(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """Keep a replica down 4.5–5.5 s, three times the log retention."""
    return fault_window("kill", "@replica:1", uniform(rng, 3.0, 4.0), uniform(rng, 4.5, 5.5), "f1")


REJOIN_AFTER_RETENTION = Scenario(
    name="rejoin-after-retention",
    summary="J13: keep a replica down past the log retention (je.rep.repStreamTimeout)",
    prediction=Prediction(
        text="the master no longer holds what the replica missed: it comes back by a full copy "
        "(network restore, REF-1004), then is a replica again; no acknowledged message lost",
        two_masters="forbidden",
        expect=(
            # After the kill began: the restarted node may log it before the lab has
            # recorded the end of the fault (a container restart returns late).
            LogSeen("REF-1004", node="f1", after="f1:start"),
            RoleAtEnd("f1", "REPLICA"),
            ServiceContinued("f1:start", "f1:end"),
        ),
    ),
    schedule=_rejoin,
    topology=THREE,
    # 8 KiB messages: JE's log grows by several of its files while the replica is away
    workload=Workload(producers=2, consumers=1, rate=100.0, duration_s=16.0, size=8192),
    group=GroupSettings(
        rep_stream_timeout_s=RETENTION_S,
        # JE deletes a log file only once its cleaner has cleaned it and a checkpoint has
        # passed: with its default 10 MB files and 20 MB between checkpoints a master keeps
        # all this run writes, and the replica rejoins by ordinary catch-up. With 1 MB files
        # and a checkpoint every 2 MB the master lets go of what the replica missed.
        target_context={
            "qpid-broker-j": {
                "je.log.fileMax": "1000000",
                "je.checkpointer.bytesInterval": "2000000",
            }
        },
    ),
)
