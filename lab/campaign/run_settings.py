"""A guided run's own settings, drawn like its faults: durability and timeouts.

A `random` run keeps its scenario's settings: every copy in memory (NO_SYNC,NO_SYNC,
SIMPLE_MAJORITY), a commit that waits 5 s for its replicas. Code that runs only under other
settings is never reached, however the faults are drawn: the paths of a group whose copies
are on disk (where `random`'s rule lets a second node go out at any time, so a replica may
stall while the master dies), a commit that gives up on its replicas while its master still
holds its role. Users run all of these; the settings a run may have are part of what a
campaign explores.

Only settings under which the run's prediction stays "no acknowledged message lost" are
drawn: the ack policy stays SIMPLE_MAJORITY (a commit waits for a majority), sync policies
move between memory, the operating system and the disk, and timeouts only get shorter (a
failure found sooner, a commit refused sooner: neither lets an acknowledged message go). A
target with failure detection of its own (`spec.target_timeouts`) keeps its settings: it
reads none of these. An active-passive cluster keeps its own too: a shorter link heartbeat
also shortens the cluster manager's status timeout, and on a loaded machine a healthy broker
would then be fenced for answering late.

    draw_settings(spec, rng) → the spec with settings drawn (or as it was, DRAWN's complement
                               of the time)
"""

from __future__ import annotations

import random
from dataclasses import replace

from lab.ground.spec import Durability, RunSpec, SyncPolicy

__all__ = ["DRAWN", "ON_DISK", "draw_settings"]

DRAWN = 0.5  # how often a run's settings are drawn at all
# The sync policies under which a killed node keeps its copies.
ON_DISK: tuple[SyncPolicy, ...] = ("WRITE_NO_SYNC", "SYNC")
IN_MEMORY_SHARE = 0.4  # of drawn group runs: copies left in memory on both sides
REPLICA_TIMEOUTS_S = (0.8, 1.5, 3.0)  # a commit's wait for replicas: within a lease and past it
SHORTER_TIMEOUT_SHARE = 0.5


def draw_settings(spec: RunSpec, rng: random.Random) -> RunSpec:
    """`spec` with its durability and timeouts drawn (DRAWN of the time), each draw inside
    the promise its prediction rests on."""
    if spec.target_timeouts or spec.group.is_active_passive or rng.random() >= DRAWN:
        return spec
    durability = spec.durability
    if rng.random() >= IN_MEMORY_SHARE:
        master, replica = rng.choice(ON_DISK), rng.choice(ON_DISK)
        durability = Durability(master, replica, "SIMPLE_MAJORITY", master != "SYNC")
    group = spec.group
    if rng.random() < SHORTER_TIMEOUT_SHARE:
        group = replace(group, insufficient_replicas_timeout_s=rng.choice(REPLICA_TIMEOUTS_S))
    return replace(spec, durability=durability, group=group)
