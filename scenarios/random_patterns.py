"""Schedules made of the patterns that break HA systems, inside `random`'s rule.

`random` draws each fault on its own, 1–3 s long, at uniform times: the mixes that studies of
real failures name as their triggers come up rarely. A pattern composes them on purpose:

- NEAT (OSDI 2018): most partition failures came from isolating a single node, most often
  the leader, while its clients still reach it, for longer than its timeouts;
- CrashTuner (SOSP 2019): crashes around the moments state changes hands — a new master in
  its first seconds, a node rejoining, a transfer, a promotion;
- lag then crash: a replica or backup trailing behind a slow link when the master dies.

Each pattern is a short plan from a moment `at`: which faults, on which role, for how long.
Lengths are drawn against the run's own timeouts (scenarios.random_timeouts: shorter and
longer than each), never fixed seconds. A pattern knows no particular bug: only the shapes
those studies report. Patterns follow one another until the load ends, each kept only when
the schedule so far still keeps `random`'s rule (scenarios.random_rule), so the prediction
stays "no acknowledged message lost" and a run that breaks is the broker's.

    pattern_schedule(spec, rng) → (schedule, names of the patterns it holds)
    PATTERNS                    → every pattern, by design
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from lab.ground.faultops import FaultOp, canonical
from lab.ground.spec import RunSpec
from lab.ground.topology import node_link
from scenarios.base import fault_when, fault_window, uniform
from scenarios.random_faults import FIRST_AT_S, LAST_HEAL_BEFORE_END_S, SHORTEST_S
from scenarios.random_rule import AP_QUIET_S, CRASH_LEAD_S, QUIET_S, rule_problem
from scenarios.random_timeouts import timeouts_of, window_s
from scenarios.random_vocabulary import (
    AP_LIGHT,
    GROUP_LIGHT,
    GROUP_OUT,
    MANAGER,
    VIP,
    available,
    below_election_timeout_ms,
    inside_link_heartbeat_ms,
)

__all__ = ["PATTERNS", "Pattern", "Step", "pattern_schedule", "patterns_for"]

LONGEST_OUT_S = 8.0  # no node is out longer than this in a pattern
TRIES = 16  # patterns tried before the schedule is left as it is
HOST_CRASH = 0.8  # a master killed under lag dies as a host does: what it had in flight is lost
STRAGGLER = 0.7  # lag on one replica's links alone (the replicas then differ), not on all
NARROW_KBS = (128, 256)  # a narrow node link's rate (KB/s): the stream flows, a backlog lasts


@dataclass(frozen=True)
class Step:
    """One fault of a pattern: applied at `start_s`, healed `length_s` later."""

    fault: str
    target: str
    start_s: float
    length_s: float
    params: dict[str, int | float | str | bool] = field(default_factory=dict)
    when: str | None = None  # armed at start_s, it strikes when this happens (TRIGGERS)
    within_s: float = 0.0  # or this long after start_s at the latest

    @property
    def end_s(self) -> float:
        """The latest its heal can come."""
        return self.start_s + self.within_s + self.length_s


Plan = Callable[[RunSpec, random.Random, float], list[Step]]


@dataclass(frozen=True)
class Pattern:
    """A pattern: its name, the HA design it is for, how often it is drawn, what it needs
    (`lag`: toxics on node links), and its plan."""

    name: str
    design: str  # "replicated-group" or "active-passive"
    weight: float
    plan: Plan
    needs: str = ""  # "", "lag" (node-link toxics), "manager" (a cluster manager to act on)


# ---- what every plan is made of --------------------------------------------------------


def _has(spec: RunSpec, kind_name: str) -> bool:
    kinds = (*AP_LIGHT,) if spec.group.is_active_passive else (*GROUP_OUT, *GROUP_LIGHT)
    return any(k.name == kind_name for k in available(spec, kinds))


def _lag(spec: RunSpec, rng: random.Random, start: float, length: float) -> list[Step]:
    """Replicas made to trail the master (as far as the rule lets a link be slowed and every
    heartbeat still arrive in time): now and then every node link slowed alike, most of the
    time (STRAGGLER) one replica alone behind its links to whichever node is master when the
    lag begins (the others keep up: the replicas then differ, as a straggler's do)."""
    ap = spec.group.is_active_passive
    bound = inside_link_heartbeat_ms(spec) if ap else below_election_timeout_ms(spec)
    latency = rng.randint(max(20, bound // 4), max(20, bound * 3 // 4))
    jitter = rng.randint(0, max(0, bound - latency - 1) // 4)
    throttle = ap and rng.random() < 0.5  # an active-passive backup behind a narrow link
    rate = rng.randint(*NARROW_KBS)
    if throttle:
        toxic: tuple[str, dict[str, int | float | str | bool]] = ("bandwidth", {"rate_kbs": rate})
    else:
        toxic = ("latency", {"latency_ms": latency, "jitter_ms": jitter})
    return [
        Step(toxic[0], link, start, length, dict(toxic[1])) for link in _lagging_links(spec, rng)
    ]


def _lagging_links(spec: RunSpec, rng: random.Random) -> list[str]:
    nodes = spec.topology.node_names
    if len(nodes) >= 3 and rng.random() < STRAGGLER:
        straggler = f"@replica:{rng.randint(1, len(nodes) - 1)}"
        return [node_link("@master", straggler), node_link(straggler, "@master")]
    return [node_link(a, b) for a in nodes for b in nodes if a != b]


def _crash(spec: RunSpec, rng: random.Random, at: float, length: float) -> list[Step]:
    """The master killed at `at` for `length`; mostly (HOST_CRASH) as a host's crash: its node
    links cut from a moment before until it is back, so that what it had in flight to its
    replicas (a slowed link's backlog in the proxies) dies with it instead of reaching them
    after its death (random_rule.CRASH_LEAD_S: the rule counts the two as one node out)."""
    kill = Step("kill", "@master", at, length)
    if not _has(spec, "node latency") or not _can_cut(spec) or rng.random() >= HOST_CRASH:
        return [kill]
    lead = CRASH_LEAD_S
    return [Step("isolate", "@master", round(at - lead, 3), round(length + lead, 3)), kill]


def _can_cut(spec: RunSpec) -> bool:
    return any(k.name == "isolate" for k in available(spec, GROUP_OUT))


def _out_s(spec: RunSpec, rng: random.Random, *names: str) -> float:
    """How long a node stays out: against the timeouts named (all of the run's by default)."""
    pool = tuple(t for t in timeouts_of(spec) if not names or t.name in names)
    return window_s(spec, rng, shortest=SHORTEST_S, longest=LONGEST_OUT_S, timeouts=pool)


def _quiet(spec: RunSpec, rng: random.Random) -> float:
    """The quiet the rule asks between two faults that take a node out, and a little more."""
    base = AP_QUIET_S if spec.group.is_active_passive else QUIET_S
    return round(base + uniform(rng, 0.05, 0.8), 3)


def _lagged(
    spec: RunSpec, rng: random.Random, at: float, inner: list[Step], chance: float = 0.7
) -> list[Step]:
    """`inner`, `chance` of the time with every node link slowed from `at` to a little after
    its last fault (when the target's node links can be slowed), its faults moved later so
    that the replicas have time to fall behind before the first of them."""
    if not inner or not _has(spec, "node latency") or rng.random() >= chance:
        return inner
    lead = uniform(rng, 0.5, 2.0) - (min(s.start_s for s in inner) - at)
    moved = [replace(s, start_s=round(s.start_s + max(0.0, lead), 3)) for s in inner]
    last = max(s.end_s for s in moved)
    return [*_lag(spec, rng, at, round(last - at + uniform(rng, 0.1, 0.5), 3)), *moved]


# ---- the replicated group --------------------------------------------------------------


def _master_cut_off(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """NEAT's leader isolation: the master cut off from the group (its clients still reach
    it) for shorter or longer than the election timeout and the replica timeout, its replicas
    trailing it."""
    start = at + uniform(rng, 0.8, 2.0)
    cut = Step(
        "isolate", "@master", start, _out_s(spec, rng, "election x2", "lease", "replica timeout")
    )
    return _lagged(spec, rng, at, [cut], chance=0.8)


def _master_crash_under_lag(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """Lag then crash: the replicas trail the master when it is killed (restarted later)."""
    start = at + uniform(rng, 0.8, 2.0)
    if _has(spec, "node latency") and rng.random() < 0.5:  # when a replica trails, under lag
        kill = Step("kill", "@master", start, _out_s(spec, rng), when="catchup", within_s=3.0)
        return _lagged(spec, rng, at, [kill], chance=1.0)
    return _lagged(spec, rng, at, _crash(spec, rng, start, _out_s(spec, rng)), chance=0.9)


def _new_master_hit(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """CrashTuner's hand-over: the master killed (or cut off), and the master the group
    elects next hit again as soon as the rule allows, while it is new."""
    first_kind = rng.choice(("kill", "isolate"))
    first = Step(first_kind, "@master", at, _out_s(spec, rng, "election timeout", "election x2"))
    second_kind = rng.choice(("kill", "isolate", "pause"))
    second = Step(second_kind, "@master", first.end_s + _quiet(spec, rng), _out_s(spec, rng))
    return _lagged(spec, rng, at, [first, second], chance=0.5)


def _rejoin_then_master_fault(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """A replica cut off long enough to fall behind, and the master hit while it catches up
    after it comes back."""
    kind = rng.choice(("isolate", "pause", "kill"))
    away = Step(kind, "@replica:1", at, _out_s(spec, rng, "election x2", "replica timeout"))
    hit = rng.choice(("kill", "isolate"))
    # As soon as the rule allows, and the moment a replica is seen trailing (catching up).
    back = Step(
        hit,
        "@master",
        away.end_s + _quiet(spec, rng),
        _out_s(spec, rng),
        when="catchup",
        within_s=round(uniform(rng, 0.5, 2.0), 3),
    )
    return _lagged(spec, rng, at, [away, back], chance=0.4)


def _flapping_master(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """The master cut off again and again, each time for about an election timeout (some
    short enough to be ridden out, some not)."""
    steps: list[Step] = []
    start = at
    for _ in range(rng.randint(2, 4)):
        length = _out_s(spec, rng, "heartbeat", "election timeout", "election x2")
        steps.append(Step("isolate", "@master", start, length))
        start = start + length + _quiet(spec, rng)
    return steps


def _transfer_then_fault(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """Mastership moved by an operator to a replica that trails, then the new master hit."""
    replica = f"@replica:{rng.randint(1, spec.topology.nodes - 1)}"
    move = Step("transfer_master", replica, at, round(uniform(rng, 1.0, 2.0), 3))
    hit = Step(
        rng.choice(("kill", "isolate")),
        "@master",
        move.end_s + _quiet(spec, rng),
        _out_s(spec, rng),
    )
    return _lagged(spec, rng, at, [move, hit], chance=0.6)


def _two_out_on_disk(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """With every copy on disk (no NO_SYNC policy), a node stalled (a full GC) while another
    is killed: the group has no quorum until one returns, and the one that returns may be
    behind (the rule allows two nodes out then)."""
    if "NO_SYNC" in (spec.durability.master_sync, spec.durability.replica_sync):
        return []
    a, b = rng.sample(spec.topology.node_names, 2)
    stall = Step("pause", a, at, _out_s(spec, rng, "election x2", "replica timeout"))
    kill_at = at + uniform(rng, 0.3, max(0.4, stall.length_s - 0.2))
    kill = Step("kill", b, kill_at, _out_s(spec, rng))
    return [stall, kill]


# ---- the active-passive cluster --------------------------------------------------------


def _primary_crash_under_lag(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """Lag then crash: the backups trail the primary (slow or narrow links) when it dies."""
    start = at + uniform(rng, 1.0, 3.0)
    return _lagged(spec, rng, at, _crash(spec, rng, start, _out_s(spec, rng)), chance=0.9)


def _backup_catchup_then_primary_crash(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """A backup killed (or frozen) and brought back behind a narrow link from the primary, so
    that its catch-up lasts, and the primary killed as soon as the rule allows: while that
    backup may still be catching up. Without a narrow link the catch-up of a few megabytes
    ends well within the quiet the rule asks between two brokers taken out, and the
    primary dies beside ready backups only."""
    backup = f"@replica:{rng.randint(1, max(1, spec.topology.nodes - 1))}"
    start = at + uniform(rng, 0.5, 1.5)
    away = Step("kill" if rng.random() < 0.7 else "pause", backup, start, _out_s(spec, rng))
    kill = Step(
        "kill",
        "@master",
        away.end_s + _quiet(spec, rng),
        _out_s(spec, rng),
        when="catchup",
        within_s=round(uniform(rng, 0.5, 3.0), 3),
    )
    if not _has(spec, "node bandwidth"):
        return _lagged(spec, rng, at, [away, kill], chance=0.8)
    rate = {"rate_kbs": rng.randint(*NARROW_KBS)}
    until = round(kill.end_s - at + uniform(rng, 0.1, 0.5), 3)
    links = (node_link("@master", backup), node_link(backup, "@master"))
    return [*(Step("bandwidth", link, at, until, dict(rate)) for link in links), away, kill]


def _new_primary_hit(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """The primary killed, and the one promoted in its place hit as soon as the rule allows,
    while the restarted broker may still be catching up."""
    first = Step("kill", "@master", at, _out_s(spec, rng))
    kind = rng.choice(("kill", "pause"))
    second = Step(kind, "@master", first.end_s + _quiet(spec, rng), _out_s(spec, rng))
    return _lagged(spec, rng, at, [first, second], chance=0.5)


def _hung_primary(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """The primary frozen (hung) for shorter or longer than the manager takes to act."""
    pool = ("manager detection", "link heartbeat x2")
    return _lagged(spec, rng, at, [Step("pause", "@master", at, _out_s(spec, rng, *pool))], 0.4)


def _failover_without_manager(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """The cluster manager away (frozen or killed) when the primary dies: it acts only when
    it is back, on what it finds then."""
    away_for = round(uniform(rng, 2.0, 6.0), 3)
    manager = Step(rng.choice(("pause", "kill")), MANAGER, at, away_for)
    kill_at = at + uniform(rng, 0.2, away_for * 0.8)
    kill = Step("kill", "@master", kill_at, _out_s(spec, rng))
    return [manager, kill]


def _clients_cut_at_failover(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """The clients' address cut while the primary fails over: they come back to whatever
    the manager made of it."""
    kill = Step("kill", "@master", at + uniform(rng, 0.5, 1.5), _out_s(spec, rng))
    cut_at = kill.start_s + uniform(rng, -0.5, 1.0)
    cut = Step("cut", VIP, max(at, cut_at), round(uniform(rng, 0.5, 3.0), 3))
    return _lagged(spec, rng, at, [kill, cut], chance=0.5)


PATTERNS: tuple[Pattern, ...] = (
    Pattern("master-cut-off", "replicated-group", 3, _master_cut_off),
    Pattern("master-crash-under-lag", "replicated-group", 2, _master_crash_under_lag),
    Pattern("new-master-hit", "replicated-group", 2, _new_master_hit),
    Pattern("rejoin-then-master-fault", "replicated-group", 2, _rejoin_then_master_fault),
    Pattern("flapping-master", "replicated-group", 1, _flapping_master),
    Pattern("transfer-then-fault", "replicated-group", 1, _transfer_then_fault),
    Pattern("two-out-on-disk", "replicated-group", 1, _two_out_on_disk),
    Pattern("primary-crash-under-lag", "active-passive", 3, _primary_crash_under_lag),
    Pattern(
        "backup-catchup-then-primary-crash",
        "active-passive",
        3,
        _backup_catchup_then_primary_crash,
    ),
    Pattern("new-primary-hit", "active-passive", 2, _new_primary_hit),
    Pattern("hung-primary", "active-passive", 1, _hung_primary),
    Pattern("failover-without-manager", "active-passive", 1, _failover_without_manager, "manager"),
    Pattern("clients-cut-at-failover", "active-passive", 1, _clients_cut_at_failover, "manager"),
)


def patterns_for(spec: RunSpec) -> tuple[Pattern, ...]:
    """The patterns of the run's HA design that its target and backend can apply."""
    design = spec.group.mode
    manager = spec.group.is_active_passive and not spec.group.active_passive.self_activated
    return tuple(p for p in PATTERNS if p.design == design and (p.needs != "manager" or manager))


def _ops(steps: list[Step], first_id: int) -> list[FaultOp]:
    ops: list[FaultOp] = []
    for number, step in enumerate(sorted(steps, key=lambda s: s.start_s), start=first_id):
        start, length, fid = round(step.start_s, 3), round(step.length_s, 3), f"f{number}"
        if step.when is None:
            ops.extend(fault_window(step.fault, step.target, start, length, fid, **step.params))
        else:
            within = round(step.within_s, 3)
            ops.extend(
                fault_when(
                    step.when, within, step.fault, step.target, start, length, fid, **step.params
                )
            )
    return ops


def pattern_schedule(
    spec: RunSpec, rng: random.Random, weights: dict[str, float] | None = None
) -> tuple[tuple[FaultOp, ...], tuple[str, ...]]:
    """Patterns one after another from the load's first moment to its end, each kept only
    when the schedule so far keeps `random`'s rule; the schedule, and the names of the
    patterns in it in order. `weights`: each pattern's weight instead of its own."""
    patterns = patterns_for(spec)
    if not patterns:
        return (), ()
    last = spec.workload.duration_s - LAST_HEAL_BEFORE_END_S
    ops: list[FaultOp] = []
    names: list[str] = []
    at = FIRST_AT_S + uniform(rng, 0.0, 0.5)
    for _ in range(TRIES):
        if at >= last - SHORTEST_S:
            break
        pattern = rng.choices(
            patterns, weights=[(weights or {}).get(p.name, p.weight) for p in patterns]
        )[0]
        steps = [s for s in pattern.plan(spec, rng, at) if s.length_s >= SHORTEST_S]
        if not steps or max(s.end_s for s in steps) > last:
            continue
        candidate = canonical([*ops, *_ops(steps, len(ops) // 2 + 1)])
        if rule_problem(spec.with_schedule(candidate)) is not None:
            continue
        ops = list(candidate)
        names.append(pattern.name)
        at = round(max(s.end_s for s in steps) + _quiet(spec, rng), 3)
    return canonical(ops), tuple(names)
