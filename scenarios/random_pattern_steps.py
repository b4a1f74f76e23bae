"""What the patterns of scenarios.random_patterns are made of: a step (one fault of a
pattern, at a moment, for a length, perhaps waiting for the cluster), a pattern (a named plan
of steps for one HA design), and the pieces every plan uses — replicas made to trail the
master, a master crashing as a host does, how long a node stays out against the run's own
timeouts, the quiet the rule asks between two nodes taken out.

    Step, Pattern, Plan       the values
    lag, lagged               replicas trailing; a plan under lag
    crash, master_hit         a master's crash (perhaps its host's); the master hit at a moment
    out_s, past_s, quiet      lengths drawn against the run's timeouts and `random`'s rule
    catch_up_moment, Moment   when a step that waits for a catch-up strikes: during, or at its end
    has, can_cut              what the run's target and backend can apply
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from lab.ground.spec import RunSpec
from lab.ground.topology import node_link
from scenarios.base import uniform
from scenarios.random_faults import SHORTEST_S, kills_keep_copies
from scenarios.random_rule import AP_QUIET_S, QUIET_S
from scenarios.random_timeouts import timeouts_of, window_s
from scenarios.random_vocabulary import (
    AP_LIGHT,
    GROUP_LIGHT,
    GROUP_OUT,
    available,
    below_election_timeout_ms,
    can_cut,
    inside_link_heartbeat_ms,
)

__all__ = [
    "NARROW_KBS",
    "Moment",
    "Pattern",
    "Plan",
    "Step",
    "can_cut",
    "catch_up_moment",
    "crash",
    "has",
    "lag",
    "lagged",
    "master_hit",
    "out_s",
    "past_s",
    "quiet",
]

LONGEST_OUT_S = 8.0  # no node is out longer than this in a pattern
HOST_CRASH = 0.8  # a master crashed dies as its host does: what it had in flight is lost
STRAGGLER = 0.7  # lag on one replica's links alone (the replicas then differ), not on all
NARROW_KBS = (128, 256)  # a narrow node link's rate (KB/s): the stream flows, a backlog lasts
PAST = (1.15, 1.6)  # a window past a timeout: this many times it (a busy machine's lateness)
AT_ITS_END = 0.5  # how often a step waiting for a catch-up strikes at its end, not during it
DURING_WITHIN_S = (0.5, 2.5)  # how long a step waits for a catch-up under way
AT_END_WITHIN_S = (2.0, 6.0)  # … for one to end (behind a narrow link it lasts seconds)


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


def has(spec: RunSpec, kind_name: str) -> bool:
    kinds = (*AP_LIGHT,) if spec.group.is_active_passive else (*GROUP_OUT, *GROUP_LIGHT)
    return any(k.name == kind_name for k in available(spec, kinds))


@dataclass(frozen=True)
class Moment:
    """When a step that hits at a catch-up strikes (`when`, `within_s`), and how long after
    the node it waits for came back it is armed (`gap_s`)."""

    when: str
    within_s: float
    gap_s: float

    def step(
        self,
        fault: str,
        target: str,
        back_s: float,
        length_s: float,
        params: dict[str, int | float | str | bool] | None = None,
    ) -> Step:
        """`fault` on `target`, armed `gap_s` after `back_s` (when the node it waits for is
        back) to strike at this moment, healed `length_s` after it struck."""
        return Step(
            fault,
            target,
            back_s + self.gap_s,
            length_s,
            dict(params or {}),
            when=self.when,
            within_s=self.within_s,
        )


def catch_up_moment(spec: RunSpec, rng: random.Random) -> Moment:
    """A step that hits at a catch-up (CrashTuner's moments of hand-over): while a replica or
    backup is catching up (`catchup`, armed after the rule's quiet), or, AT_ITS_END of the
    time, the moment one that was out or behind counts again (`caught-up`: a backup calling
    itself ready, a replica back near its master), when its master starts to rely on it.

    A step waiting for `caught-up` must be armed before the catch-up ends. A replica of a
    group catches up within about a second of its return, which is the rule's quiet when a
    copy is in memory, so there `caught-up` is drawn only with every copy on disk, where the
    rule asks no quiet and the step is armed as the node comes back. An active-passive
    backup is armed after the quiet (3 s): its pattern holds the catch-up open behind a
    narrow link until then."""
    ap = spec.group.is_active_passive
    if (ap or kills_keep_copies(spec)) and rng.random() < AT_ITS_END:
        within = round(uniform(rng, *AT_END_WITHIN_S), 3)
        return Moment("caught-up", within, quiet(spec, rng) if ap else 0.0)
    return Moment("catchup", round(uniform(rng, *DURING_WITHIN_S), 3), quiet(spec, rng))


def lag(spec: RunSpec, rng: random.Random, start: float, length: float) -> list[Step]:
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


def crash(
    spec: RunSpec, rng: random.Random, at: float, length: float, moment: Moment | None = None
) -> Step:
    """The master killed at `at` for `length` (with a `moment`: armed at `at` and its gap, it
    strikes whichever node is master at that moment); mostly (HOST_CRASH) as a host's crash
    (`host: true`): its node links cut as it dies and until it is back, so that what it had
    in flight to its replicas (a slowed link's backlog in the proxies) dies with it instead
    of reaching them after its death, as a crashed host's unsent data does."""
    host = has(spec, "node latency") and can_cut(spec) and rng.random() < HOST_CRASH
    params: dict[str, int | float | str | bool] = {"host": True} if host else {}
    if moment is None:
        return Step("kill", "@master", at, length, params)
    return moment.step("kill", "@master", at, length, params)


def master_hit(
    spec: RunSpec, rng: random.Random, fault: str, back_s: float, length: float, moment: Moment
) -> Step:
    """The master hit by `fault` at `moment`, armed after `back_s` (`Moment.step`); a kill is
    a crash, mostly its host's (`crash`)."""
    if fault == "kill":
        return crash(spec, rng, back_s, length, moment)
    return moment.step(fault, "@master", back_s, length)


def out_s(spec: RunSpec, rng: random.Random, *names: str) -> float:
    """How long a node stays out: against the timeouts named (all of the run's by default)."""
    pool = tuple(t for t in timeouts_of(spec) if not names or t.name in names)
    return window_s(spec, rng, shortest=SHORTEST_S, longest=LONGEST_OUT_S, timeouts=pool)


def past_s(spec: RunSpec, rng: random.Random, *names: str) -> float:
    """How long a node stays out past the first of the timeouts `names` the run has (PAST
    times it), clipped to LONGEST_OUT_S: a fault meant to be acted on, whose window outlasts
    it for sure. A target whose timeouts are its own may lack a name (RabbitMQ has no judged
    lease): the next one is taken, and without any, a length of out_s."""
    own = {t.name: t.seconds for t in timeouts_of(spec)}
    found = [own[name] for name in names if name in own]
    if not found:
        return out_s(spec, rng)
    low, high = (found[0] * f for f in PAST)
    return round(min(uniform(rng, low, high), LONGEST_OUT_S), 3)


def quiet(spec: RunSpec, rng: random.Random) -> float:
    """The quiet the rule asks between two faults that take a node out, and a little more."""
    base = AP_QUIET_S if spec.group.is_active_passive else QUIET_S
    return round(base + uniform(rng, 0.05, 0.8), 3)


def lagged(
    spec: RunSpec, rng: random.Random, at: float, inner: list[Step], chance: float = 0.7
) -> list[Step]:
    """`inner`, `chance` of the time with every node link slowed from `at` to a little after
    its last fault (when the target's node links can be slowed), its faults moved later so
    that the replicas have time to fall behind before the first of them."""
    if not inner or not has(spec, "node latency") or rng.random() >= chance:
        return inner
    lead = uniform(rng, 0.5, 2.0) - (min(s.start_s for s in inner) - at)
    moved = [replace(s, start_s=round(s.start_s + max(0.0, lead), 3)) for s in inner]
    last = max(s.end_s for s in moved)
    return [*lag(spec, rng, at, round(last - at + uniform(rng, 0.1, 0.5), 3)), *moved]
