"""`replication-partition`: the link between a primary and its backup cut under load, both
ways, while clients still reach both brokers: the split brain Artemis's manual warns of, asked
of every active-passive cluster (the lab's cluster manager, or brokers that activate
themselves).

The C++ broker's "Active-Passive Messaging Clusters" ("Fencing and network partitions")
leaves partitions to the cluster's quorum and fencing: the two sides cannot tell a dead peer
from a cut one, so they must not each declare a primary and serve; only one side may go on.
Its "Avoiding message loss": the primary acknowledges only what every backup it counts
holds, and a backup it no longer hears is dropped after twice the link heartbeat, the
senders held meanwhile.


Two brokers, producers spread (p2 tries n2 first), consumers only at the end (what a second
primary took waits there to be found). Halfway through the partition the clients lose n1 for
a moment (its client link cut), so they reconnect and go with whichever broker takes them: a
second primary, were there one, would get their work.
"""

from __future__ import annotations

import random
from dataclasses import replace

from lab.ground.faultops import FaultOp
from lab.ground.spec import RunSpec, Topology, Workload
from lab.ground.topology import client_link
from lab.judge.cluster_expectations import StatusReached
from lab.judge.expectations import ServiceContinued
from lab.judge.prediction import Prediction
from scenarios.active_passive import CLUSTER, HEARTBEAT_S, SLACK_S
from scenarios.active_passive_self import self_cluster
from scenarios.base import Scenario, fault_window, uniform

__all__ = ["REPLICATION_PARTITION"]

PARTITION_S = 8.0
CLIENT_CUT_S = 1.5


def _partition(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """n1 (the first primary) cut from n2 6–7 s in (the load settled: a loaded machine's clients
    may take seconds to their first acknowledgement), for 8 s; 4 s into it, n1's client link
    cut for 1.5 s."""
    at = uniform(rng, 6.0, 7.0)
    return (
        *fault_window("partition", "group", at, PARTITION_S, "f1", sides="n1|n2"),
        *fault_window("cut", client_link("n1"), at + 4.0, CLIENT_CUT_S, "f2"),
    )


PREDICTION = Prediction(
    text="only one side of a partition may go on: never two primaries at once, whoever "
    "decides (a cluster manager, the brokers' lock or vote); the primary drops the backup it "
    "no longer hears after twice the link heartbeat and serves on, senders held meanwhile; no "
    "acknowledged message is lost; after the heal the backup catches up and is ready again",
    two_masters="forbidden",
    expect=(
        ServiceContinued("f1:start", "f2:start", max_gap_s=2 * HEARTBEAT_S + SLACK_S),
        StatusReached("n2", "ready", after="f1:end"),
    ),
)

_BASE = Scenario(
    name="replication-partition",
    summary="the primary↔backup link cut under load while clients reach both brokers "
    "(split brain?)",
    prediction=PREDICTION,
    schedule=_partition,
    topology=Topology(nodes=2),
    workload=Workload(
        producers=2,
        consumers=1,
        rate=100.0,
        duration_s=20.0,
        consume_during_load=False,
        spread_producers=True,
    ),
    group=CLUSTER,
)

REPLICATION_PARTITION = replace(_BASE, self_activated=replace(_BASE, group=self_cluster(CLUSTER)))
