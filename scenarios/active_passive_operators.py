"""The C++ broker's active-passive clusters when the cluster manager cannot help, or is
bypassed: C2, C5 and C6 of docs/scenarios.md (the C++ broker's active-passive chapter,
"Troubleshooting", "Integrating with other Cluster Resource Managers", "Security")."""

from __future__ import annotations

import random

from lab.ground.faultops import FaultOp
from lab.ground.spec import RunSpec, Topology, Workload
from lab.judge.cluster_expectations import (
    EventNever,
    EventSeen,
    StatusNever,
    StatusReached,
)
from lab.judge.expectations import LogSeen, ServiceResumed, ServiceStopped
from lab.judge.prediction import Prediction
from scenarios.active_passive import CLUSTER, LOAD, THREE, cluster
from scenarios.base import Scenario, fault_window, uniform

__all__ = ["BACKUP_AUTH_FAILURE", "PROMOTE_ONLY_READY", "ROGUE_PROMOTE"]


def _only_catching_up(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """Two brokers. The backup is killed (the manager restarts it: it catches up with a full
    copy) while its link from the primary is slowed to a trickle, so its catch-up of the
    backlog lasts; the primary is killed while the backup is still catching up; later an
    operator restarts the cluster (the seed's remedy for a hung cluster)."""
    backup_down = uniform(rng, 2.5, 3.0)
    primary_down = backup_down + uniform(rng, 4.0, 4.5)
    remedy = primary_down + uniform(rng, 4.0, 4.5)
    return (
        *fault_window("kill", "@replica", backup_down, 2.0, "f1"),
        *fault_window(
            "bandwidth",
            "@master_to_@replica",
            backup_down + 0.5,
            remedy - backup_down - 1.0,
            "f2",
            rate_kbs=4,
        ),
        *fault_window("kill", "@master", primary_down, 2.0, "f3"),
        *fault_window("restart_cluster", "manager", remedy, 0.5, "f4"),
    )


PROMOTE_ONLY_READY = Scenario(
    name="promote-only-ready",
    summary="C2: kill the primary while the only backup is still catching up",
    prediction=Prediction(
        text="no backup is ready, so no promotion is possible: the manager finds no "
        "candidate and says so, the cluster hangs and clients stall; once an operator "
        "restarts the cluster, the last primary recovers from its store: no acknowledged "
        "message is lost",
        two_masters="forbidden",
        expect=(
            StatusNever("f1", "ready", after="f1:start", before="f3:start"),
            EventSeen("manager.no-candidate", after="f3:start"),
            EventNever("manager.promote", node="f1"),
            ServiceStopped("f3:start", "f4:start"),
            ServiceResumed("f4:start", within_s=8.0),
        ),
    ),
    schedule=_only_catching_up,
    topology=Topology(nodes=2),
    workload=Workload(
        producers=2, consumers=1, rate=100.0, duration_s=20.0, consume_during_load=False
    ),
    group=CLUSTER,
)


def _rogue(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """The clients lose the primary for a moment (its client link cut) and go on with
    whichever broker takes them; meanwhile an operator promotes a ready backup while the
    primary runs."""
    away = uniform(rng, 4.0, 5.0)
    undone = spec.workload.duration_s - 3.0  # the operator restarts the broker promoted
    return (
        *fault_window("cut", "client_to_@master", away, uniform(rng, 4.5, 5.0), "f1"),
        *fault_window("promote", "@replica:1", away + 0.3, undone - away - 0.3, "f2"),
    )


ROGUE_PROMOTE = Scenario(
    name="rogue-promote",
    summary="C5: an operator promotes a backup while the primary runs (promote misused)",
    prediction=Prediction(
        text="two primaries at once; the document warns the cluster 'will malfunction and "
        "lose data': the lab sees both primaries and reports whatever is lost (the operator "
        "then restarts the broker promoted, which rejoins as a backup)",
        loss="allowed",
        two_masters="expected",
        expect=(
            StatusReached("f2", "recovering", after="f2:start"),
            EventSeen("manager.two-primaries", after="f2:start"),
        ),
    ),
    schedule=_rogue,
    topology=THREE,
    workload=Workload(
        producers=2,
        consumers=1,
        rate=100.0,
        duration_s=16.0,
        consume_during_load=False,
        spread_producers=True,
    ),
    group=CLUSTER,
)


def _auth_failure(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """kill -9 the primary 5–6 s in: the manager must choose among the backups."""
    return fault_window("kill", "@master", uniform(rng, 5.0, 6.0), 3.0, "f1")


MISCONFIGURED = "n3"

BACKUP_AUTH_FAILURE = Scenario(
    name="backup-auth-failure",
    summary="C6: a backup configured with a wrong ha-password; then the primary fails",
    prediction=Prediction(
        text="the misconfigured backup's replication link is refused and logged; it never "
        "becomes ready, and the manager never promotes it, also when the primary fails; "
        "no acknowledged message is lost",
        two_masters="forbidden",
        expect=(
            LogSeen("REF-2012", node=MISCONFIGURED),
            LogSeen("REF-2013"),
            StatusNever(MISCONFIGURED, "ready"),
            EventNever("manager.promote", node=MISCONFIGURED),
            EventSeen("manager.promote", after="f1:start"),
            ServiceResumed("f1:start", within_s=5.0),
        ),
    ),
    schedule=_auth_failure,
    topology=THREE,
    workload=LOAD,
    group=cluster(ha_auth=True, passwords={MISCONFIGURED: "not-the-password"}),
)
