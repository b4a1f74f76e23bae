"""A guided run's own settings, drawn like its faults: durability, timeouts, priorities, and
a group of two with a designated primary.

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
failure found sooner, a commit refused sooner: neither lets an acknowledged message go).
The master's and the replicas' sync policies are drawn apart as well as together: one side in
memory and the other on disk (Broker-J's own default is SYNC on the master, NO_SYNC on the
replicas) is what users run most, and code that reads one side's policy where it means the
other's runs right only when the two differ. `random`'s rule keeps one node out at a time
while any side is in memory, so a majority still holds every acknowledged copy.
Node priorities are drawn among Normal, High and Highest (1–3): the documents' election picks
the node with the most recent transaction and uses priority only to break a tie, so a group
whose nodes differ in priority keeps the promise, and only there does an election that
weighs priority wrongly (before recency, or instead of it) choose differently from a right
one. Never (0) is not drawn: the documents say it can lose acknowledged work.
A group of two whose first node is the designated primary (the Java broker's two-node
cluster: the node that is normally master is set so; the other never goes on alone) is drawn
too: a pair has no majority without both nodes, so its primary's paths — going on alone when
its replica has failed or cannot be reached, waiting for it while it is in contact — run
only there. Four in ten drawn runs are pairs: settings are drawn only for runs made of
patterns, one way of the guide's four, so at one in five a 10-minute campaign could end
without a single pair. `random`'s rule keeps one node out at a time there as well, and the
promise holds: the designated primary acknowledges alone only what it then writes out within
the quiet before the next fault, and the other node never makes itself master.
A commit's wait for its replicas is drawn within a master's lease, past it, and shorter than
a round trip over slowed node links (what `random`'s lag allows: up to two thirds of the
election timeout each way): under lag, commits then give up while their master keeps its
role and its replicas are in contact — the fail-slow replica, whose timeout paths a crash
or a cut never runs. A target with failure detection of its own (`spec.target_timeouts`)
keeps its settings: it reads none of these. An active-passive cluster keeps its own too: a
shorter link heartbeat also shortens the cluster manager's status timeout, and on a loaded
machine a healthy broker would then be fenced for answering late.

    draw_settings(spec, rng) → the spec with settings drawn (or as it was, DRAWN's complement
                               of the time)
"""

from __future__ import annotations

import random
from dataclasses import replace

from lab.ground.spec import Durability, RunSpec, SyncPolicy
from scenarios.random_vocabulary import below_election_timeout_ms

__all__ = ["DRAWN", "ON_DISK", "draw_settings", "replica_timeouts"]

DRAWN = 0.5  # how often a run's settings are drawn at all
# The sync policies under which a killed node keeps its copies.
ON_DISK: tuple[SyncPolicy, ...] = ("WRITE_NO_SYNC", "SYNC")
IN_MEMORY_SHARE = 0.4  # of drawn group runs: copies left in memory on both sides
MIXED_SHARE = 0.25  # of drawn group runs: one side in memory, the other on disk
REPLICA_TIMEOUTS_S = (0.8, 1.5, 3.0)  # a commit's wait for replicas: within a lease and past it
SHORTER_TIMEOUT_SHARE = 0.5
PRIORITY_SHARE = 0.4  # of drawn group runs: every node's priority drawn from PRIORITIES
PRIORITIES = (1, 2, 3)  # Normal, High, Highest (never Never: 0)
PAIR_SHARE = 0.4  # of drawn group runs of three: a group of two, n1 its designated primary


def draw_settings(spec: RunSpec, rng: random.Random) -> RunSpec:
    """`spec` with its durability and timeouts drawn (DRAWN of the time), each draw inside
    the promise its prediction rests on."""
    if spec.target_timeouts or spec.group.is_active_passive or rng.random() >= DRAWN:
        return spec
    durability = spec.durability
    where = rng.random()
    if where >= IN_MEMORY_SHARE:
        master, replica = rng.choice(ON_DISK), rng.choice(ON_DISK)
        if where < IN_MEMORY_SHARE + MIXED_SHARE:
            master, replica = rng.choice(((master, "NO_SYNC"), ("NO_SYNC", replica)))
        durability = Durability(master, replica, "SIMPLE_MAJORITY", master != "SYNC")
    group = spec.group
    if rng.random() < SHORTER_TIMEOUT_SHARE:
        group = replace(group, insufficient_replicas_timeout_s=rng.choice(replica_timeouts(spec)))
    topology = spec.topology
    if rng.random() < PAIR_SHARE and topology.nodes == 3 and not topology.spares:
        topology = replace(topology, nodes=2)
        group = replace(group, designated_primary=(topology.node_names[0],))
    if rng.random() < PRIORITY_SHARE:
        drawn = {node: rng.choice(PRIORITIES) for node in topology.node_names}
        group = replace(group, priority=drawn)
    return replace(spec, topology=topology, durability=durability, group=group)


def replica_timeouts(spec: RunSpec) -> tuple[float, ...]:
    """The waits for replicas a run may draw: REPLICA_TIMEOUTS_S, and one shorter than a
    round trip over node links slowed as far as `random` slows them (the bound of one way,
    below_election_timeout_ms: 0.4 s with the default election timeout), never longer than
    the spec's own."""
    slowed = round(below_election_timeout_ms(spec) / 1000, 3)
    own = spec.group.insufficient_replicas_timeout_s
    return tuple(t for t in (slowed, *REPLICA_TIMEOUTS_S) if t <= own) or (own,)
