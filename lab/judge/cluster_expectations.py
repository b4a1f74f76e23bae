"""What a prediction asserts of an active-passive cluster's run, beyond its messages: the
brokers' HA statuses and the cluster manager's decisions (from the events), where a loss
fell (from the checker), and the counters the brokers report.

    StatusReached(node, status, after=None, within_s=None,   a node.ha event: `node` took
                  nodes=1)                                   `status` (after a moment);
                                                             node None: `nodes` nodes did
    StatusNever(node, status, after=None, before=None)       it never did (in a window)
    EventSeen(kind, node=None, after=None, within_s=None)    an event (manager.promote …)
    EventNever(kind, node=None)                              no such event
    LostOnlyFrom(processes)                                  every lost message was sent
                                                             by these producers
    MetricAtLeast(name, value)                               a run metric reached a value
    ClientsNoticed(fault, within_s)                          a client lost its connection to
                                                             the node the fault took out
    TookOver(fault, within_s=None)                           another node than the one the
                                                             fault took out became MASTER
                                                             after it began (the target's
                                                             election allowance added)
    ReadyPromoted(within_s, manager)                         never longer than `within_s`
                                                             without a primary while a
                                                             live backup was ready (the
                                                             time a fault kept the manager
                                                             away not counted)

Nodes and moments are references as in expectations.py (`n2`, `f1`, `master@f1`; `f1:start`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from lab.judge.facts import Observation, RunFacts

__all__ = [
    "ClientsNoticed",
    "EventNever",
    "EventSeen",
    "LostOnlyFrom",
    "MetricAtLeast",
    "ReadyPromoted",
    "StatusNever",
    "StatusReached",
    "TookOver",
]


def _matching(
    facts: RunFacts, kind: str, node: str | None, after: str | None, within_s: float | None
) -> Iterator[Observation]:
    name = None if node is None else facts.node(node)
    since = None if after is None else facts.moment(after)
    for seen in facts.observed:
        if seen.kind != kind or (name is not None and seen.node != name):
            continue
        if since is not None and seen.time_s < since:
            continue
        if since is not None and within_s is not None and seen.time_s > since + within_s:
            continue
        yield seen


def _statuses(facts: RunFacts, name: str) -> list[Observation]:
    return [o for o in facts.observed if o.kind == "node.ha" and o.node == name]


def _when(node: str | None, after: str | None, within_s: float | None) -> str:
    where = "" if node is None else f" on {node}"
    when = "" if after is None else f" after {after}"
    bound = "" if within_s is None else f" within {within_s:g} s"
    return where + when + bound


@dataclass(frozen=True)
class StatusReached:
    """`node` (None: any node; `nodes` of them at least, each its own) took `status`,
    after `after`, within `within_s` of it."""

    violation: ClassVar[str] = "status-not-reached"

    node: str | None
    status: str
    after: str | None = None
    within_s: float | None = None
    nodes: int = 1

    def unmet(self, facts: RunFacts) -> str | None:
        seen = {
            o.node
            for o in _matching(facts, "node.ha", self.node, self.after, self.within_s)
            if o.detail.get("status") == self.status
        }
        if len(seen) >= self.nodes:
            return None
        when = _when(None, self.after, self.within_s)
        if self.node is None:
            if self.nodes > 1:
                took = ", ".join(sorted(str(n) for n in seen)) or "none"
                return f"fewer than {self.nodes} nodes became {self.status}{when} ({took} did)"
            return f"no node became {self.status}{when}"
        name = facts.node(self.node)
        taken = [str(o.detail.get("status")) for o in _statuses(facts, name)]
        went = " → ".join(taken) or "nowhere"
        return f"{name} ({self.node}) never became {self.status}{when} (it went {went})"


@dataclass(frozen=True)
class StatusNever:
    """`node` never took `status` (between `after` and `before`, when given)."""

    violation: ClassVar[str] = "status-reached"

    node: str
    status: str
    after: str | None = None
    before: str | None = None

    def unmet(self, facts: RunFacts) -> str | None:
        name = facts.node(self.node)
        since = None if self.after is None else facts.moment(self.after)
        until = None if self.before is None else facts.moment(self.before)
        for seen in facts.observed:
            if since is not None and seen.time_s < since:
                continue
            if until is not None and seen.time_s > until:
                continue
            if (
                seen.kind == "node.ha"
                and seen.node == name
                and seen.detail.get("status") == self.status
            ):
                return f"{name} ({self.node}) became {self.status} at {seen.time_s:.2f} s"
        return None


@dataclass(frozen=True)
class EventSeen:
    violation: ClassVar[str] = "event-missing"

    kind: str
    node: str | None = None
    after: str | None = None
    within_s: float | None = None

    def unmet(self, facts: RunFacts) -> str | None:
        if next(_matching(facts, self.kind, self.node, self.after, self.within_s), None):
            return None
        name = None if self.node is None else facts.node(self.node)
        return f"no {self.kind}{_when(name, self.after, self.within_s)}"


@dataclass(frozen=True)
class EventNever:
    violation: ClassVar[str] = "event-seen"

    kind: str
    node: str | None = None

    def unmet(self, facts: RunFacts) -> str | None:
        found = next(_matching(facts, self.kind, self.node, None, None), None)
        if found is None:
            return None
        where = "" if found.node is None else f" on {found.node}"
        return f"{self.kind}{where} at {found.time_s:.2f} s"


@dataclass(frozen=True)
class LostOnlyFrom:
    """Every lost message was sent by one of `processes` (e.g. the producer of an
    unreplicated queue); the checker names the first lost ids (up to its limit)."""

    violation: ClassVar[str] = "lost"

    processes: tuple[str, ...]

    def unmet(self, facts: RunFacts) -> str | None:
        check = facts.check
        if check is None:
            return "the checker's result is not known here"
        prefixes = tuple(f"{p}-" for p in self.processes)
        others = [i for i in check.lost.ids if not i.startswith(prefixes)]
        if not others:
            return None
        shown = ", ".join(others[:5])
        return f"{len(others)} lost message(s) not from {', '.join(self.processes)}: {shown}"


@dataclass(frozen=True)
class MetricAtLeast:
    violation: ClassVar[str] = "metric-below"

    name: str
    value: float

    def unmet(self, facts: RunFacts) -> str | None:
        got = getattr(facts.metrics, self.name, None)
        if isinstance(got, int | float) and got >= self.value:
            return None
        return f"{self.name} was {got}, expected at least {self.value:g}"


@dataclass(frozen=True)
class ClientsNoticed:
    """The clients lost their connection to the node fault `fault` took out within
    `within_s` of its start (a hung node: their AMQP heartbeat noticed it)."""

    violation: ClassVar[str] = "clients-did-not-notice"

    fault: str
    within_s: float

    def unmet(self, facts: RunFacts) -> str | None:
        found = facts.fault(self.fault)
        order = sorted(facts.faults.values(), key=lambda f: f.start_s)
        index = next(i for i, f in enumerate(order) if f.id == found.id)
        noticed = facts.metrics.clients_noticed_s
        seconds = noticed[index] if index < len(noticed) else None
        if seconds is not None and seconds <= self.within_s:
            return None
        seen = "never" if seconds is None else f"after {seconds:.2f} s"
        return (
            f"clients noticed {found.target} ({self.fault}) {seen}, "
            f"expected within {self.within_s:g} s"
        )


@dataclass(frozen=True)
class TookOver:
    """A node other than the one fault `fault` took out reported MASTER (its own role,
    `node.role`) after the fault began, within `within_s` and the target's election
    allowance when given: a backup took over by itself."""

    violation: ClassVar[str] = "no-takeover"

    fault: str
    within_s: float | None = None

    def unmet(self, facts: RunFacts) -> str | None:
        found = facts.fault(self.fault)
        bound = None
        if self.within_s is not None:
            bound = self.within_s + facts.target.election_allowance_s
        for o in facts.observed:
            if o.kind != "node.role" or o.node == found.target or o.time_s < found.start_s:
                continue
            if o.detail.get("role") != "MASTER":
                continue
            waited = o.time_s - found.start_s
            if bound is None or waited <= bound:
                return None
            return (
                f"{o.node} took over from {found.target} ({self.fault}) {waited:.2f} s after "
                f"it began, expected within {bound:g} s"
            )
        return f"no node took over from {found.target} ({self.fault}) after it began"


_PRIMARY = ("active", "recovering")


@dataclass(frozen=True)
class ReadyPromoted:
    """The cluster was never without a primary for longer than `within_s` while a backup
    that was alive (not killed, stopped or frozen) answered `ready`: the manager promotes a
    ready backup when the primary is lost. The time a fault kept the manager itself away
    (`manager`: its fault target's name) is not counted. Judged from the brokers' statuses
    and the node events, including a run whose queue could not be drained afterwards (a
    cluster left without a primary is what keeps the consumers from draining it)."""

    violation: ClassVar[str] = "no-promotion"
    holds_without_drain: ClassVar[bool] = True

    within_s: float
    manager: str = "manager"

    def unmet(self, facts: RunFacts) -> str | None:
        away = [
            (f.start_s, f.end_s if f.end_s is not None else float("inf"))
            for f in facts.faults.values()
            if f.target == self.manager
        ]
        for since, until, ready in _without_primary(facts.observed):
            counted = (until - since) - sum(
                max(0.0, min(until, b) - max(since, a)) for a, b in away
            )
            if counted > self.within_s:
                return (
                    f"no primary from {since:.2f} s to {until:.2f} s ({counted:.1f} s, "
                    f"more than {self.within_s:g} s) while {', '.join(ready)} was a ready backup"
                )
        return None


def _without_primary(
    observed: tuple[Observation, ...],
) -> Iterator[tuple[float, float, tuple[str, ...]]]:
    """The spans in which no live broker was primary while a live one was ready: from the
    event that began one to the event that ended it (or the last event), with the brokers
    ready in it."""
    status: dict[str, str] = {}
    frozen: set[str] = set()
    since: float | None = None
    ready: tuple[str, ...] = ()
    for o in observed:
        if o.node is not None:
            _follow(status, frozen, o)
        alive = {n: s for n, s in status.items() if n not in frozen}
        now_ready = tuple(sorted(n for n, s in alive.items() if s == "ready"))
        if now_ready and not any(s in _PRIMARY for s in alive.values()):
            since, ready = (o.time_s if since is None else since), now_ready
        elif since is not None:
            yield since, o.time_s, ready
            since = None
    if since is not None:
        yield since, observed[-1].time_s, ready


def _follow(status: dict[str, str], frozen: set[str], o: Observation) -> None:
    """A node's HA status through the events: its own reports, and down while killed or
    stopped, joining once started, frozen from a pause to its resume."""
    node = str(o.node)
    if o.kind == "node.ha":
        status[node] = str(o.detail.get("status"))
    elif o.kind in ("node.kill", "node.stop", "node.exit"):
        status[node] = "down"
        frozen.discard(node)
    elif o.kind == "node.start":
        status[node] = "joining"
    elif o.kind == "node.pause":
        frozen.add(node)
    elif o.kind == "node.resume":
        frozen.discard(node)
