"""The patterns of scenarios.random_patterns for an active-passive cluster (the C++ broker's
design, with its cluster manager): the primary crashed under lag or while a backup catches up
(perhaps a backup whose stall the manager did not see), the new primary hit again, a hung
primary, failover with the manager away, the clients' address cut at failover."""

from __future__ import annotations

import random
from dataclasses import replace

from lab.ground.spec import RunSpec
from lab.ground.topology import node_link
from scenarios.base import uniform
from scenarios.random_pattern_steps import (
    NARROW_KBS,
    Pattern,
    Step,
    catch_up_moment,
    crash,
    has,
    lagged,
    out_s,
    past_s,
    quiet,
)
from scenarios.random_vocabulary import MANAGER, VIP

__all__ = ["AP_PATTERNS"]

FIRST_IN_LINE = 0.75  # how often a backup set catching up is the first by name
UNSEEN = 0.5  # how often a frozen backup's stall is hidden from the cluster manager


def _next_in_line(spec: RunSpec, rng: random.Random) -> str:
    """A backup: FIRST_IN_LINE of the time the first by name (`@replica:1`), the one a cluster
    manager that goes through its brokers in name order would look at first when the primary
    dies; otherwise any."""
    if rng.random() < FIRST_IN_LINE:
        return "@replica:1"
    return f"@replica:{rng.randint(1, max(1, spec.topology.nodes - 1))}"


def _primary_crash_under_lag(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """Lag then crash: the backups trail the primary (slow or narrow links) when it dies."""
    start = at + uniform(rng, 1.0, 3.0)
    return lagged(spec, rng, at, [crash(spec, rng, start, out_s(spec, rng))], chance=0.9)


def _backup_catchup_then_primary_crash(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """A backup killed (or frozen) and brought back behind a narrow link from the primary, so
    that its catch-up lasts, and the primary crashed (mostly as its host: what the narrow link
    still held for the backup is lost with it) as soon as the rule allows: while that
    backup may still be catching up, or (`catch_up_moment`) the moment it calls itself
    ready. Without a narrow link the catch-up of a few megabytes ends well within the quiet
    the rule asks between two brokers taken out, and the primary dies beside ready backups
    only. The backup is mostly the one a manager choosing by name would look at first
    (`_next_in_line`), so that a promotion that takes a backup in catch-up for a ready one
    has the chance to. A frozen backup's stall may go unseen by the manager
    (`_unseen_stall`)."""
    backup = _next_in_line(spec, rng)
    start = at + uniform(rng, 0.5, 1.5)
    away = Step("kill" if rng.random() < 0.7 else "pause", backup, start, out_s(spec, rng))
    unseen = _unseen_stall(spec, rng, away)
    away = unseen[0] if unseen else away
    moment = catch_up_moment(spec, rng)
    kill = crash(spec, rng, away.end_s, out_s(spec, rng), moment)
    if not has(spec, "node bandwidth"):
        return lagged(spec, rng, at, [away, kill, *unseen[1:]], chance=0.8)
    rate = {"rate_kbs": rng.randint(*NARROW_KBS)}
    # Until after the kill; or, waiting for the catch-up's end, until just after the kill is
    # armed (a load heavier than the narrow link would keep the backup catching up for good).
    last = kill.end_s if moment.when == "catchup" else kill.start_s
    until = round(last - at + uniform(rng, 0.1, 0.5), 3)
    links = (node_link("@master", backup), node_link(backup, "@master"))
    narrow = [Step("bandwidth", link, at, until, dict(rate)) for link in links]
    return [*narrow, away, kill, *unseen[1:]]


def _unseen_stall(spec: RunSpec, rng: random.Random, away: Step) -> list[Step]:
    """A frozen backup (a full GC, a stalled host) whose stall the cluster manager does not
    see (UNSEEN of them, where a manager runs): the backup frozen past the two link
    heartbeats after which its primary drops it, and the manager frozen from a moment before
    until a moment after it, so that it neither fences the backup nor sees it answer late.
    When both wake, the primary has dropped a backup the manager never saw fail: two views
    of the cluster that disagree (the backup is the one to say it no longer counts). The
    backup's pause, then the manager's; [] when not drawn."""
    if away.fault != "pause" or not has(spec, "manager pause") or rng.random() >= UNSEEN:
        return []
    stall = replace(away, length_s=past_s(spec, rng, "link heartbeat x2"))
    before = uniform(rng, 0.05, 0.3)
    blind = round(before + stall.length_s + uniform(rng, 0.2, 0.8), 3)
    return [stall, Step("pause", MANAGER, round(stall.start_s - before, 3), blind)]


def _new_primary_hit(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """The primary killed, and the one promoted in its place hit as soon as the rule allows,
    while the restarted broker may still be catching up."""
    first = Step("kill", "@master", at, out_s(spec, rng))
    kind = rng.choice(("kill", "pause"))
    second = Step(kind, "@master", first.end_s + quiet(spec, rng), out_s(spec, rng))
    return lagged(spec, rng, at, [first, second], chance=0.5)


def _hung_primary(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """The primary frozen (hung) for shorter or longer than the manager takes to act."""
    pool = ("manager detection", "link heartbeat x2")
    return lagged(spec, rng, at, [Step("pause", "@master", at, out_s(spec, rng, *pool))], 0.4)


def _failover_without_manager(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """The cluster manager away (frozen or killed) when the primary dies: it acts only when
    it is back, on what it finds then."""
    away_for = round(uniform(rng, 2.0, 6.0), 3)
    manager = Step(rng.choice(("pause", "kill")), MANAGER, at, away_for)
    kill_at = at + uniform(rng, 0.2, away_for * 0.8)
    kill = Step("kill", "@master", kill_at, out_s(spec, rng))
    return [manager, kill]


def _clients_cut_at_failover(spec: RunSpec, rng: random.Random, at: float) -> list[Step]:
    """The clients' address cut while the primary fails over: they come back to whatever
    the manager made of it."""
    kill = Step("kill", "@master", at + uniform(rng, 0.5, 1.5), out_s(spec, rng))
    cut_at = kill.start_s + uniform(rng, -0.5, 1.0)
    cut = Step("cut", VIP, max(at, cut_at), round(uniform(rng, 0.5, 3.0), 3))
    return lagged(spec, rng, at, [kill, cut], chance=0.5)


AP_PATTERNS: tuple[Pattern, ...] = (
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
