"""The patterns of scenarios.random_patterns for a replicated group (Broker-J's design): the
master cut off, crashed under lag, replaced and hit again, a replica rejoining, a flapping
master, a transfer, two nodes out with every copy on disk, a rolling restart."""

from __future__ import annotations

import random

from lab.ground.spec import RunSpec
from scenarios.base import uniform
from scenarios.random_pattern_steps import (
    Moment,
    Pattern,
    Step,
    catch_up_moment,
    crash,
    has,
    lagged,
    master_hit,
    out_s,
    past_s,
    quiet,
)

__all__ = ["GROUP_PATTERNS"]

PAST_LEASE = 0.5  # master-cut-off: how often the cut outlasts the judged lease
AT_RETURN = 0.5  # new-master-hit: how often the new master is hit at the old one's return


def _master_cut_off(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """NEAT's leader isolation: the master cut off from the group (its clients still reach
    it) for shorter or longer than the election timeout and the replica timeout, its replicas
    trailing it; half of the time (PAST_LEASE) past the judged lease, so that a master that
    keeps its role while the others elect is seen as two masters."""
    start = at + uniform(rng, 0.8, 2.0)
    if rng.random() < PAST_LEASE:
        length = past_s(spec, rng, "judged lease", "lease")
    else:
        length = out_s(spec, rng, "election x2", "lease", "replica timeout")
    cut = Step("isolate", "@master", start, length)
    return lagged(spec, rng, at, [cut], chance=0.8)


def _master_crash_under_lag(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """Lag then crash: the replicas trail the master when it is killed (restarted later)."""
    start = at + uniform(rng, 0.8, 2.0)
    if has(spec, "node latency") and rng.random() < 0.5:  # when a replica trails, under lag
        kill = crash(spec, rng, start, out_s(spec, rng), Moment("catchup", 3.0, 0.0))
        return lagged(spec, rng, at, [kill], chance=1.0)
    return lagged(spec, rng, at, [crash(spec, rng, start, out_s(spec, rng))], chance=0.9)


def _new_master_hit(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """CrashTuner's hand-over: the master killed (or cut off), and the master the group
    elects next hit again as soon as the rule allows, while it is new; or (AT_RETURN of the
    time) when the old master, back from its cut (with what it took from its clients while
    it was cut off) or from its crash, is catching up or has just caught up
    (`catch_up_moment`). The election that follows then runs among nodes whose logs differ:
    a returning master's unreplicated suffix against the transactions the group committed
    without it."""
    first_kind = rng.choice(("kill", "isolate"))
    first = Step(first_kind, "@master", at, out_s(spec, rng, "election timeout", "election x2"))
    second_kind = rng.choice(("kill", "isolate", "pause"))
    if rng.random() < AT_RETURN:
        moment = catch_up_moment(spec, rng)
        second = master_hit(spec, rng, second_kind, first.end_s, out_s(spec, rng), moment)
    else:
        second = Step(second_kind, "@master", first.end_s + quiet(spec, rng), out_s(spec, rng))
    return lagged(spec, rng, at, [first, second], chance=0.5)


def _rejoin_then_master_fault(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """A replica cut off long enough to fall behind, and the master hit while it catches up
    after it comes back, or the moment it has caught up (`catch_up_moment`)."""
    kind = rng.choice(("isolate", "pause", "kill"))
    away = Step(kind, "@replica:1", at, out_s(spec, rng, "election x2", "replica timeout"))
    hit = rng.choice(("kill", "isolate"))
    # As soon as the rule allows: the moment a replica is seen trailing, or caught up again.
    moment = catch_up_moment(spec, rng)
    back = master_hit(spec, rng, hit, away.end_s, out_s(spec, rng), moment)
    return lagged(spec, rng, at, [away, back], chance=0.4)


def _flapping_master(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """The master cut off again and again, each time for about an election timeout (some
    short enough to be ridden out, some not)."""
    steps: list[Step] = []
    start = at
    for _ in range(rng.randint(2, 4)):
        length = out_s(spec, rng, "heartbeat", "election timeout", "election x2")
        steps.append(Step("isolate", "@master", start, length))
        start = start + length + quiet(spec, rng)
    return steps


def _transfer_then_fault(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """Mastership moved by an operator to a replica that trails, then the new master hit."""
    replica = f"@replica:{rng.randint(1, spec.topology.nodes - 1)}"
    move = Step("transfer_master", replica, at, round(uniform(rng, 1.0, 2.0), 3))
    hit = Step(
        rng.choice(("kill", "isolate")),
        "@master",
        move.end_s + quiet(spec, rng),
        out_s(spec, rng),
    )
    return lagged(spec, rng, at, [move, hit], chance=0.6)


def _two_out_on_disk(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """With every copy on disk (no NO_SYNC policy), a node stalled (a full GC) while another
    is killed: the group has no quorum until one returns, and the one that returns may be
    behind (the rule allows two nodes out then)."""
    if "NO_SYNC" in (spec.durability.master_sync, spec.durability.replica_sync):
        return []
    a, b = rng.sample(spec.topology.node_names, 2)
    stall = Step("pause", a, at, out_s(spec, rng, "election x2", "replica timeout"))
    kill_at = at + uniform(rng, 0.3, max(0.4, stall.length_s - 0.2))
    kill = Step("kill", b, kill_at, out_s(spec, rng))
    return [stall, kill]


def _rolling_restart(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """An operator's rolling restart (or upgrade): every replica killed and restarted in
    turn, the next as soon as the rule allows, then the master hit the moment a replica is
    seen catching up or the moment one has caught up: CrashTuner's moments of hand-over one
    after another, ending with the master's. (An active-passive cluster has no such pattern:
    a primary lost while no backup is ready leaves it hanging until an operator acts, as its
    documents say.)"""
    replicas = [f"@replica:{i}" for i in range(1, spec.topology.nodes)]
    rng.shuffle(replicas)
    steps: list[Step] = []
    start = at + uniform(rng, 0.5, 1.5)
    moment = catch_up_moment(spec, rng)
    for replica in replicas:
        if steps:
            start = steps[-1].end_s + quiet(spec, rng)
        steps.append(
            Step("kill", replica, start, out_s(spec, rng, "election x2", "replica timeout"))
        )
    hit_kind = rng.choice(("kill", "isolate"))
    hit = master_hit(spec, rng, hit_kind, steps[-1].end_s, out_s(spec, rng), moment)
    return lagged(spec, rng, at, [*steps, hit], chance=0.6)


GROUP_PATTERNS: tuple[Pattern, ...] = (
    Pattern("master-cut-off", "replicated-group", 3, _master_cut_off),
    Pattern("master-crash-under-lag", "replicated-group", 2, _master_crash_under_lag),
    Pattern("new-master-hit", "replicated-group", 2, _new_master_hit),
    Pattern("rejoin-then-master-fault", "replicated-group", 2, _rejoin_then_master_fault),
    Pattern("flapping-master", "replicated-group", 1, _flapping_master),
    Pattern("transfer-then-fault", "replicated-group", 1, _transfer_then_fault),
    Pattern("two-out-on-disk", "replicated-group", 1, _two_out_on_disk),
    Pattern("rolling-restart", "replicated-group", 1, _rolling_restart),
)
