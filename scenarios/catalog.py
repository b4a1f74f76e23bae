"""Every scenario the lab can run, by name."""

from __future__ import annotations

from collections.abc import Mapping

from lab.ground.errors import UsageError
from scenarios.active_passive import REPLICATE_NONE
from scenarios.active_passive_operators import ROGUE_PROMOTE
from scenarios.active_passive_self import (
    BACKUP_AUTH_FAILURE,
    CONSUMED_BEFORE_REPLICATED,
    HUNG_PRIMARY,
    PRIMARY_FAILURE,
    PROMOTE_ONLY_READY,
    TOTAL_FAILURE,
)
from scenarios.base import Scenario
from scenarios.disk_full import DISK_FULL
from scenarios.durability_matrix import DURABILITY_MATRIX
from scenarios.group_membership import GROW_GROUP, REMOVE_REPLICA
from scenarios.host_faults import CLOCK_DRIFT, CLOCK_JUMP, CLOCK_STROBE, LOSSY_NETWORK
from scenarios.incident import INCIDENT
from scenarios.node_operations import ROLLING_RESTART
from scenarios.random_faults import RANDOM
from scenarios.replicated_group import (
    MASTER_FAILURE,
    NEVER_PRIORITY_LOSS,
    QUORUM_LOSS,
    QUORUM_OVERRIDE,
    REJOIN_AFTER_RETENTION,
    REPLICA_GC_STALL,
    REPLICA_GC_STALL_ALL,
    TRANSFER_MASTER,
)
from scenarios.replication_partition import REPLICATION_PARTITION
from scenarios.single_node import SINGLE_NODE_CRASH
from scenarios.two_node_group import (
    PARTITION_AND_RECOVERY,
    REPLICA_FAILURE,
    SPLIT_BRAIN,
    TWO_NODE_MASTER_FAILURE,
)

__all__ = ["RUNNABLE", "SCENARIOS", "scenario_named"]

SCENARIOS: Mapping[str, Scenario] = {
    s.name: s
    for s in (
        SINGLE_NODE_CRASH,
        MASTER_FAILURE,
        TWO_NODE_MASTER_FAILURE,
        REPLICA_FAILURE,
        PARTITION_AND_RECOVERY,
        SPLIT_BRAIN,
        QUORUM_LOSS,
        QUORUM_OVERRIDE,
        NEVER_PRIORITY_LOSS,
        TRANSFER_MASTER,
        ROLLING_RESTART,
        GROW_GROUP,
        REMOVE_REPLICA,
        REPLICA_GC_STALL,
        REPLICA_GC_STALL_ALL,
        DURABILITY_MATRIX,
        REJOIN_AFTER_RETENTION,
        DISK_FULL,
        RANDOM,
        PRIMARY_FAILURE,
        PROMOTE_ONLY_READY,
        TOTAL_FAILURE,
        CONSUMED_BEFORE_REPLICATED,
        ROGUE_PROMOTE,
        BACKUP_AUTH_FAILURE,
        REPLICATE_NONE,
        HUNG_PRIMARY,
        REPLICATION_PARTITION,
        INCIDENT,
        CLOCK_JUMP,
        CLOCK_DRIFT,
        CLOCK_STROBE,
        LOSSY_NETWORK,
    )
}

# The scenarios a seed runs (`lab run NAME --seed N`, campaigns, the scenario tests): all
# but the incident, whose schedule comes from a file.
RUNNABLE: Mapping[str, Scenario] = {n: s for n, s in SCENARIOS.items() if not s.needs_spec}


def scenario_named(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        known = ", ".join(sorted(SCENARIOS))
        raise UsageError(f"unknown scenario {name!r} (known: {known}; see `lab list`)") from None
