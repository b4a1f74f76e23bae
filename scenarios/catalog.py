"""Every scenario the lab can run, by name: its own (`SCENARIOS`), then those installed
packages add through the `lab.scenarios` entry point group (lab.ground.plugins).

    scenario_named(name)     a built-in or an entry point's scenario (UsageError: unknown)
    scenario_source(name)    `built-in`, or the entry point and its package (`lab list`)
    every_scenario()         (name, scenario, source) for all, each entry point loaded
    runnable_names()         the names a seed runs (campaigns): all but the incident

An entry point names a `Scenario` (scenarios.base), or a function of no arguments that
returns one; the scenario's name is the entry point's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lab.ground.plugins import SCENARIO_GROUP, Plugin, Registry
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

__all__ = [
    "REGISTRY",
    "RUNNABLE",
    "SCENARIOS",
    "every_scenario",
    "registry",
    "runnable_names",
    "scenario_named",
    "scenario_source",
]

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


def _scenario_of(plugin: Plugin, loaded: object) -> Scenario:
    found = loaded() if callable(loaded) else loaded
    if not isinstance(found, Scenario):
        raise plugin.refuse(
            f"names a {type(found).__name__}, not a Scenario (scenarios.base) "
            "or a function that returns one"
        )
    if found.name != plugin.name:
        raise plugin.refuse(f"its scenario is called {found.name!r}: name the entry point so")
    return found


def _unknown(name: str, known: tuple[str, ...]) -> str:
    return f"unknown scenario {name!r} (known: {', '.join(sorted(known))}; see `lab list`)"


def registry(plugins: Callable[[], tuple[Plugin, ...]] | None = None) -> Registry[Scenario]:
    """The registry of scenarios: the lab's own, then `plugins` (default: installed ones)."""
    return Registry(SCENARIO_GROUP, lambda: SCENARIOS, _scenario_of, _unknown, plugins)


REGISTRY = registry()


def scenario_named(name: str) -> Scenario:
    return REGISTRY.get(name)


def scenario_source(name: str) -> str:
    return REGISTRY.source(name)


def every_scenario() -> list[tuple[str, Scenario, str]]:
    return REGISTRY.items()


def runnable_names() -> tuple[str, ...]:
    """The lab's own scenarios a seed runs, then every entry point's name (whether an entry
    point's runs from a seed is known once it is loaded: `scenario_named`)."""
    return (*RUNNABLE, *sorted(REGISTRY.plugins()))
