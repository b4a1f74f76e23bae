"""The C++ broker's active-passive clusters ("Active-Passive Messaging Clusters"): C1, C3, C4,
C7 and C8 of docs/scenarios.md, where a primary fails and the cluster manager acts.

Defaults: 3 brokers, `ha-replicate all`, the lab's cluster manager polling every 1 s,
clients with the list of every broker. The link heartbeat is 1 s (a backup is dead to its
primary after 2 s; the manager waits 1 s for a status), so the seed's bounds are short.
A killed broker is restarted by the manager (recovery=restart), so a kill's own heal finds
it running already.
"""

from __future__ import annotations

import random

from lab.ground.cluster_settings import ACTIVE_PASSIVE, ActivePassiveSettings
from lab.ground.faultops import FaultOp
from lab.ground.spec import GroupSettings, RunSpec, SideQueue, Topology, Workload
from lab.ground.topology import node_link
from lab.judge.cluster_expectations import (
    ClientsNoticed,
    EventSeen,
    LostOnlyFrom,
    MetricAtLeast,
    StatusReached,
)
from lab.judge.expectations import RoleAtEnd, ServiceResumed
from lab.judge.prediction import Prediction
from scenarios.base import Scenario, fault_window, uniform

__all__ = [
    "CLUSTER",
    "CONSUMED_BEFORE_REPLICATED",
    "HUNG_PRIMARY",
    "PRIMARY_FAILURE",
    "REPLICATE_NONE",
    "TOTAL_FAILURE",
    "cluster",
]

POLL_S = 1.0
HEARTBEAT_S = 1.0
SETTINGS = ActivePassiveSettings(
    ha_replicate="all",
    ha_backup_timeout_s=3.0,
    link_heartbeat_interval_s=HEARTBEAT_S,
    link_maintenance_interval_s=0.2,
    status_poll_interval_s=POLL_S,
)
CLUSTER = GroupSettings(mode=ACTIVE_PASSIVE, active_passive=SETTINGS)
THREE = Topology(nodes=3)
LOAD = Workload(producers=2, consumers=1, rate=100.0, duration_s=16.0)
HELD_BACK = Workload(
    producers=2, consumers=1, rate=100.0, duration_s=16.0, consume_during_load=False
)


def cluster(**changes: object) -> GroupSettings:
    """The scenarios' cluster with some settings changed."""
    return GroupSettings(mode=ACTIVE_PASSIVE, active_passive=SETTINGS.with_changes(**changes))


def _primary_failure(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """kill -9 the primary 4–7 s in (the manager restarts it; the heal finds it running)."""
    return fault_window("kill", "@master", uniform(rng, 4.0, 7.0), 3.0, "f1")


PRIMARY_FAILURE = Scenario(
    name="primary-failure",
    summary="C1: 3 brokers under load; kill -9 the primary; the manager promotes a ready backup",
    prediction=Prediction(
        text="the manager promotes a ready backup, which is recovering, then active; clients "
        "fail over and re-send what was not acknowledged: no acknowledged loss, duplicates "
        "possible; the restarted broker rejoins as a backup and becomes ready",
        two_masters="forbidden",
        expect=(
            EventSeen("manager.promote", after="f1:start"),
            StatusReached(None, "recovering", after="f1:start"),
            StatusReached(None, "active", after="f1:start"),
            ServiceResumed("f1:start", within_s=5.0),
            StatusReached("f1", "ready", after="f1:start"),
            RoleAtEnd("f1", "REPLICA"),
        ),
    ),
    schedule=_primary_failure,
    topology=THREE,
    workload=LOAD,
    group=CLUSTER,
)


def _total_failure(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """Every broker killed at once 5–7 s in (the manager restarts them all)."""
    at = uniform(rng, 5.0, 7.0)
    return tuple(
        op
        for i, node in enumerate(spec.topology.node_names, start=1)
        for op in fault_window("kill", node, at, 3.0, f"f{i}")
    )


TOTAL_FAILURE = Scenario(
    name="total-failure",
    summary="C3: every broker killed together, then restarted; durable and non-durable messages",
    prediction=Prediction(
        text="the first broker promoted recovers its durable messages from its store, the "
        "others clear theirs and resynchronise from it: no durable message is lost; the "
        "non-durable messages are lost, as the document says (detected)",
        loss="detected",
        two_masters="forbidden",
        expect=(
            LostOnlyFrom(("p3",)),
            EventSeen("manager.promote", after="f1:start"),
            ServiceResumed("f1:start", within_s=8.0),
            # The others resynchronise from the first promoted (which one is first is the
            # manager's choice: the last primary, which a kill a moment late can change).
            StatusReached(None, "ready", after="f1:start", nodes=2),
        ),
    ),
    schedule=_total_failure,
    topology=THREE,
    workload=Workload(
        producers=2,
        consumers=1,
        rate=100.0,
        duration_s=16.0,
        consume_during_load=False,
        side=SideQueue("lab-transient", durable=False),
    ),
    group=CLUSTER,
)

LATENCY_MS = 100


def _consumed_first(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """100 ms on every broker→broker link all along (replication trails the consumers);
    kill -9 the primary 6–8 s in."""
    end = spec.workload.duration_s - 1.0
    lags = tuple(
        op
        for i, (a, b) in enumerate(
            ((a, b) for a in spec.topology.node_names for b in spec.topology.node_names if a != b),
            start=1,
        )
        for op in fault_window(
            "latency", node_link(a, b), 0.5, end - 0.5, f"l{i}", latency_ms=LATENCY_MS, jitter_ms=0
        )
    )
    return (*lags, *fault_window("kill", "@master", uniform(rng, 6.0, 8.0), 3.0, "f1"))


CONSUMED_BEFORE_REPLICATED = Scenario(
    name="consumed-before-replicated",
    summary="C4: consumers keep up with producers while replication trails; kill the primary",
    prediction=Prediction(
        text="messages consumed and acknowledged before they were replicated need no "
        "replication (counted); no acknowledged message is lost on failover",
        two_masters="forbidden",
        expect=(
            MetricAtLeast("consumed_before_replicated", 1),
            EventSeen("manager.promote", after="f1:start"),
            ServiceResumed("f1:start", within_s=6.0),
        ),
    ),
    schedule=_consumed_first,
    topology=THREE,
    workload=LOAD,
    group=CLUSTER,
)


def _replicate_none(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    return fault_window("kill", "@master", uniform(rng, 6.0, 8.0), 3.0, "f1")


REPLICATE_NONE = Scenario(
    name="replicate-none",
    summary="C7: a queue declared qpid.replicate none beside a replicated one; kill the primary",
    prediction=Prediction(
        text="the unreplicated queue's messages are gone after the fail-over (detected); the "
        "replicated queue loses nothing",
        loss="detected",
        two_masters="forbidden",
        expect=(
            LostOnlyFrom(("p3",)),
            EventSeen("manager.promote", after="f1:start"),
            ServiceResumed("f1:start", within_s=5.0),
        ),
    ),
    schedule=_replicate_none,
    topology=THREE,
    workload=Workload(
        producers=2,
        consumers=1,
        rate=100.0,
        duration_s=16.0,
        consume_during_load=False,
        side=SideQueue("lab-unreplicated", replicate="none"),
    ),
    group=CLUSTER,
)

CLIENT_HEARTBEAT_S = 1.0


def _hung_primary(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """Freeze the primary 4–6 s in, for 6 s (longer than any detection)."""
    return fault_window("pause", "@master", uniform(rng, 4.0, 6.0), 6.0, "f1")


DETECTED_S = POLL_S + HEARTBEAT_S  # the manager: its poll interval plus the status timeout
SLACK_S = 1.5  # a loaded two-core machine: the status checks, a kill, a restart

HUNG_PRIMARY = Scenario(
    name="hung-primary",
    summary="C8: the primary hangs (paused); clients with a heartbeat and the manager notice",
    prediction=Prediction(
        text="clients with a heartbeat notice within twice it; the manager notices within its "
        "poll interval plus the status timeout, stops the hung broker and promotes a ready "
        "backup; senders are held meanwhile (measured); no acknowledged message is lost",
        two_masters="forbidden",
        expect=(
            ClientsNoticed("f1", within_s=2 * CLIENT_HEARTBEAT_S + SLACK_S),
            EventSeen("manager.fence", node="f1", after="f1:start", within_s=DETECTED_S + SLACK_S),
            EventSeen("manager.promote", after="f1:start", within_s=DETECTED_S + 2 * SLACK_S),
            ServiceResumed("f1:start", within_s=DETECTED_S + 4.0),
        ),
    ),
    schedule=_hung_primary,
    topology=THREE,
    workload=Workload(
        producers=2, consumers=1, rate=100.0, duration_s=16.0, heartbeat_s=CLIENT_HEARTBEAT_S
    ),
    group=CLUSTER,
)
