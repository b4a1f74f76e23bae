"""The active-passive scenarios for a cluster whose brokers activate themselves (a target like
Apache ActiveMQ Artemis: a lock manager or a quorum vote decides which broker is active; no
cluster manager promotes one, none moves a virtual address, the lab only watches).

Each is the same situation as its C++ twin (active_passive.py, active_passive_operators.py)
with the prediction the C++ broker's "Active-Passive Messaging Clusters" makes of it once
the brokers themselves do what its cluster manager does: only a ready backup may become the
primary, clients fail over and re-send, the acknowledged survives, and a network partition
or a hung broker must never leave two primaries (the document's "Fencing and network
partitions": one side only goes on). Bounds come from the settings these runs give the
brokers: the link heartbeat is 1 s and a broker is dead to its peers after twice it
(Artemis's connection-ttl), plus the target's election allowance (its activation), which the
judge adds.


C5 (a backup promoted by hand) and C7 (a queue left unreplicated) have no variant: such a
target refuses them before anything starts. The scenario `replication-partition` cuts the
replication link under load, for both kinds of cluster (replication_partition.py).
"""

from __future__ import annotations

import random
from dataclasses import replace

from lab.ground.cluster_settings import SELF_ACTIVATED
from lab.ground.faultops import FaultOp
from lab.ground.spec import GroupSettings, RunSpec
from lab.judge.cluster_expectations import (
    ClientsNoticed,
    LostOnlyFrom,
    StatusNever,
    StatusReached,
    TookOver,
)
from lab.judge.expectations import LogSeen, RoleNever, ServiceResumed, ServiceStopped
from lab.judge.prediction import Prediction
from scenarios import active_passive as ap
from scenarios import active_passive_operators as ops
from scenarios.base import Scenario, ScheduleFn, fault_window, uniform

__all__ = [
    "BACKUP_AUTH_FAILURE",
    "CONSUMED_BEFORE_REPLICATED",
    "HUNG_PRIMARY",
    "PRIMARY_FAILURE",
    "PROMOTE_ONLY_READY",
    "SELF_CLUSTER",
    "TOTAL_FAILURE",
    "self_cluster",
]

DEAD_AFTER_S = 2 * ap.HEARTBEAT_S  # a silent broker is dead to its peers (connection-ttl)
SLACK_S = ap.SLACK_S


def self_cluster(group: GroupSettings) -> GroupSettings:
    """`group` with its brokers activating themselves."""
    return replace(
        group, active_passive=group.active_passive.with_changes(activation=SELF_ACTIVATED)
    )


SELF_CLUSTER = self_cluster(ap.CLUSTER)


def _variant(
    base: Scenario, prediction: Prediction, schedule: ScheduleFn | None = None
) -> Scenario:
    """`base` with its self-activated variant: the same name, faults (unless `schedule`) and
    load, its brokers activating themselves, and `prediction`."""
    variant = replace(
        base,
        prediction=prediction,
        group=self_cluster(base.group),
        schedule=schedule or base.schedule,
        self_activated=None,
    )
    return replace(base, self_activated=variant)


PRIMARY_FAILURE = _variant(
    ap.PRIMARY_FAILURE,
    Prediction(
        text="no cluster manager: a ready backup takes over by itself once it finds its "
        "primary gone (at once for a killed one: its connection closes), recovering then "
        "active; clients fail over and re-send what was not acknowledged: no acknowledged "
        "loss, duplicates possible; the killed broker, restarted, rejoins as a backup and "
        "becomes ready",
        two_masters="forbidden",
        expect=(
            TookOver("f1", within_s=DEAD_AFTER_S),
            StatusReached(None, "recovering", after="f1:start"),
            StatusReached(None, "active", after="f1:start"),
            ServiceResumed("f1:start", within_s=5.0),
            StatusReached("f1", "ready", after="f1:end"),
        ),
    ),
)


def _only_catching_up(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """Two brokers, n1 the primary (a self-activated cluster starts with its first broker
    primary; named, since a broker down answers to no role). The backup is killed and started
    again 2 s later: it copies its primary's journal afresh while what the primary sends it is
    slowed to a trickle (the backup dials its primary: the link is the backup's, its
    downstream the primary's bytes); the primary is killed while the backup is still copying
    and stays down (no manager restarts it) until an operator restarts the cluster."""
    backup_down = uniform(rng, 2.5, 3.0)
    primary_down = backup_down + uniform(rng, 4.0, 4.5)
    remedy = primary_down + uniform(rng, 4.0, 4.5)
    return (
        *fault_window("kill", "n2", backup_down, 2.0, "f1"),
        *fault_window(
            "bandwidth",
            "n2_to_n1",
            backup_down + 0.5,
            remedy - backup_down - 1.0,
            "f2",
            rate_kbs=4,
        ),
        *fault_window("kill", "n1", primary_down, remedy - primary_down - 0.1, "f3"),
        *fault_window("restart_cluster", "cluster", remedy, 0.5, "f4"),
    )


PROMOTE_ONLY_READY = _variant(
    ops.PROMOTE_ONLY_READY,
    Prediction(
        text="no backup is ready, so none may take over: the backup still copying its "
        "primary's journal when the primary dies stays passive (its copy is not whole), the "
        "cluster hangs and clients stall; once an operator restarts the cluster, the broker "
        "that was primary (it holds the newest data) serves again: no acknowledged message "
        "is lost",
        two_masters="forbidden",
        expect=(
            StatusNever("f1", "ready", after="f1:start", before="f3:start"),
            RoleNever("f1", ("MASTER",), after="f3:start"),
            ServiceStopped("f3:start", "f4:start"),
            ServiceResumed("f4:start", within_s=8.0),
        ),
    ),
    schedule=_only_catching_up,
)

TOTAL_FAILURE = _variant(
    ap.TOTAL_FAILURE,
    Prediction(
        text="every broker down at once, then started again: the broker with the newest "
        "data takes over by itself (the others must not: their data may be older) and "
        "recovers its durable messages from its store, the others clear theirs and "
        "resynchronise from it: no durable message is lost; the non-durable messages are "
        "lost, as the document says (detected)",
        loss="detected",
        two_masters="forbidden",
        expect=(
            LostOnlyFrom(("p3",)),
            StatusReached(None, "recovering", after="f1:end"),
            ServiceResumed("f1:end", within_s=8.0),
            StatusReached(None, "ready", after="f1:end", nodes=2),
        ),
    ),
)

CONSUMED_BEFORE_REPLICATED = _variant(
    ap.CONSUMED_BEFORE_REPLICATED,
    Prediction(
        text="consumers keep up with producers while replication trails; the primary is "
        "killed: a ready backup takes over by itself and no acknowledged message is lost on "
        "failover (that a message consumed before it was replicated needs no replication is "
        "the C++ broker's saving; a broker that replicates every journal record and counts "
        "none is not asked to show it)",
        two_masters="forbidden",
        expect=(
            TookOver("f1", within_s=DEAD_AFTER_S),
            ServiceResumed("f1:start", within_s=6.0),
        ),
    ),
)

BACKUP_AUTH_FAILURE = _variant(
    ops.BACKUP_AUTH_FAILURE,
    Prediction(
        text="the backup with the wrong cluster password is refused when it tries to join "
        "its primary, and it is logged on both sides; it never becomes ready and never takes "
        "over, also when the primary fails: the other backup does; no acknowledged message "
        "is lost",
        two_masters="forbidden",
        expect=(
            LogSeen("REF-2012", node=ops.MISCONFIGURED),
            LogSeen("REF-2013"),
            StatusNever(ops.MISCONFIGURED, "ready"),
            StatusNever(ops.MISCONFIGURED, "recovering"),
            StatusNever(ops.MISCONFIGURED, "active"),
            TookOver("f1", within_s=DEAD_AFTER_S),
            ServiceResumed("f1:start", within_s=5.0),
        ),
    ),
)

HUNG_PRIMARY = _variant(
    ap.HUNG_PRIMARY,
    Prediction(
        text="the primary hangs and no manager fences it: clients with a heartbeat notice "
        "within twice it; the backup finds its primary silent within twice the link "
        "heartbeat and takes over; when the hung broker wakes it must not serve as a second "
        "primary (the document: only one side may go on, the other kept from service); no "
        "acknowledged message is lost",
        two_masters="forbidden",
        expect=(
            ClientsNoticed("f1", within_s=2 * ap.CLIENT_HEARTBEAT_S + SLACK_S),
            TookOver("f1", within_s=DEAD_AFTER_S + SLACK_S),
            ServiceResumed("f1:start", within_s=DEAD_AFTER_S + 4.0),
        ),
    ),
)
