"""What a prediction asserts beyond lost and duplicated messages, each a small frozen value.

    LogSeen(code, node=None, after=None)     an operational-log code was written (HA-1014 …)
    RoleAtEnd(node, role)                    the node's role when the run ended
    RoleNever(node, roles, after)            the node never reported one of `roles` from
                                             `after` to the end (nor ended in one)
    StoppedCleanly(fault)                    the node a graceful stop hit ended by itself
    ServiceStopped(start, end, slack_s)      no acknowledged send in [start + slack, end]
    ServiceContinued(start, end, max_gap_s)  no gap between acknowledged sends above max_gap_s
                                             (end None: until the load's end)
    ServiceResumed(after, within_s, terms,   an acknowledged send within a bound of `after` (or
                   begins_within_s=0)        of a gap's beginning, that late after it): within_s
                                             plus the run's timeouts `terms` names
                                             (lab.judge.bounds), plus the restart when `after`
                                             is a node's restart; a load that ended before the
                                             bound cannot show it (unknown)

Nodes and moments are references (lab.judge.facts), written before the run when roles are
not yet known: a node is `n2` (by name), `f1` (the node fault f1 struck, its `@master`
resolved) or `master@f1` (the node that was MASTER when f1 began); a moment is `f1:start` or
`f1:end` (when f1 was applied, when it was healed). Service is read from the run's
unavailability windows (gaps between acknowledged sends longer than the metrics' threshold,
1 s) during the load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

from lab.ground.spec import RunSpec
from lab.judge.bounds import Timing, Timings
from lab.judge.facts import RunFacts
from lab.judge.metrics import Window

__all__ = [
    "Expectation",
    "LogSeen",
    "RoleAtEnd",
    "RoleNever",
    "ServiceContinued",
    "ServiceResumed",
    "ServiceStopped",
    "StoppedCleanly",
]

KILLED = (-9, 137)  # a process's status after SIGKILL; a container's exit code


class Expectation(Protocol):
    """A part of a prediction beyond lost and duplicated messages: any value with this
    method (a frozen dataclass, as the lab's own are). Its class may set `violation`, the
    kind its reason has in result.json (else its class name in lower case with dashes)."""

    def unmet(self, facts: RunFacts) -> str | None:
        """None when the run shows it; else the reason, naming what was seen.
        May raise UnknownReference when the run never reached the fault it names."""
        ...


def _windows(facts: RunFacts) -> tuple[Window, ...]:
    return facts.metrics.unavailable_windows


OWN_CODE_PREFIX = "REF-"  # broker_ref's codes beside Broker-J's (broker_ref/oplog.py)
UNCHECKABLE = "cannot be checked:"


def _shown(windows: tuple[Window, ...]) -> str:
    if not windows:
        return "no gap over the threshold"
    return ", ".join(f"{w.start_s:.2f}–{w.end_s:.2f} s" for w in windows)


@dataclass(frozen=True)
class LogSeen:
    """A node wrote an operational-log code (`HA-1014` …).

    Parameters:
        code: the log code.
        node: the node that must write it (a reference: `n2`, `f1`, `master@f1`); None:
            any node.
        after: a moment it must come after (`f1:start`, `f1:end`); None: any time.
    """

    violation: ClassVar[str] = "log-missing"

    code: str
    node: str | None = None
    after: str | None = None

    def unmet(self, facts: RunFacts) -> str | None:
        node = None if self.node is None else facts.node(self.node)
        since = None if self.after is None else facts.moment(self.after)
        if (
            self.code.startswith(OWN_CODE_PREFIX)
            and facts.target.name != "broker_ref"
            and self.code not in facts.target.lab_codes
        ):
            return (
                f"{UNCHECKABLE} {self.code} is broker_ref's own log code; {facts.target.name} "
                "writes none for this event, so its logs cannot show it"
            )
        for line in facts.logs:
            if line.code != self.code:
                continue
            if node is not None and line.node != node:
                continue
            if since is not None and line.time_s < since:
                continue
            return None
        where = "" if node is None else f" on {node}"
        when = "" if self.after is None else f" after {self.after}"
        seen = sorted({f"{line.node}" for line in facts.logs if line.code == self.code})
        also = f" (it was written by {', '.join(seen)})" if seen else ""
        return f"no {self.code}{where}{when} in the operational logs{also}"


@dataclass(frozen=True)
class RoleAtEnd:
    """A node's role when the run ended (its answer to the lab's last status check).

    Parameters:
        node: a reference: `n2`, `f1` (the node f1 struck), `master@f1`.
        role: the role it must end in (`MASTER`, `REPLICA` …).
    """

    violation: ClassVar[str] = "role-at-end"

    node: str
    role: str

    def unmet(self, facts: RunFacts) -> str | None:
        name = facts.node(self.node)
        role = facts.final_roles.get(name)
        if role == self.role:
            return None
        return f"{name} ({self.node}) ended as {role or 'no answer'}, expected {self.role}"


@dataclass(frozen=True)
class RoleNever:
    """The node never reported any of `roles` (its own role changes, `node.role`) from the
    moment `after` on, nor ended the run in one: a node the group refuses never serves.

    Parameters:
        node: a reference: `n2`, `f1`, `master@f1`.
        roles: the roles it must never take (`("MASTER",)` …).
        after: the moment from which (`f1:start`, `f1:end`).
    """

    violation: ClassVar[str] = "role-reached"

    node: str
    roles: tuple[str, ...]
    after: str

    def unmet(self, facts: RunFacts) -> str | None:
        name = facts.node(self.node)
        since = facts.moment(self.after)
        for o in facts.observed:
            if o.kind == "node.role" and o.node == name and o.time_s >= since:
                role = o.detail.get("role")
                if role in self.roles:
                    later = o.time_s - since
                    return f"{name} ({self.node}) became {role} {later:.2f} s after {self.after}"
        final = facts.final_roles.get(name)
        if final in self.roles:
            return f"{name} ({self.node}) ended as {final}"
        return None


@dataclass(frozen=True)
class StoppedCleanly:
    """The node `fault` (a graceful stop) hit stopped by itself after it began: its
    node.stop status is not SIGKILL's (the lab kills a node not ended 30 s after SIGTERM)."""

    violation: ClassVar[str] = "not-stopped-cleanly"

    fault: str

    def unmet(self, facts: RunFacts) -> str | None:
        found = facts.fault(self.fault)
        stops = [
            o
            for o in facts.observed
            if o.kind == "node.stop" and o.node == found.target and o.time_s >= found.start_s
        ]
        if not stops:
            return f"{found.target} ({self.fault}) was never seen stopping after {self.fault}:start"
        status = stops[0].detail.get("status")
        if status in KILLED:
            return f"{found.target} ({self.fault}) did not stop by itself: killed (status {status})"
        return None


@dataclass(frozen=True)
class ServiceStopped:
    """No acknowledged send from `start` to `end`: the service stopped through a window.

    Parameters:
        start: the moment the window begins (`f1:start`).
        end: the moment it ends (`f1:end`); no later than the load's end.
        slack_s: seconds after `start` not counted (commits already in flight).
        end_slack_s: seconds before `end` not counted (the lab records a heal once its
            command returns, and `docker unpause` returns a little after the node runs
            again).
    """

    violation: ClassVar[str] = "served-while-stopped"

    start: str
    end: str
    slack_s: float = 0.5
    end_slack_s: float = 0.25

    def unmet(self, facts: RunFacts) -> str | None:
        a = facts.moment(self.start) + self.slack_s
        b = min(facts.moment(self.end) - self.end_slack_s, facts.metrics.load_end_s)
        if b <= a:
            return None
        windows = _windows(facts)
        if any(w.start_s <= a and w.end_s >= b for w in windows):
            return None
        return (
            f"service did not stop from {self.start} (+{self.slack_s:g} s) to {self.end} "
            f"(-{self.end_slack_s:g} s) "
            f"({a:.2f}–{b:.2f} s): messages were acknowledged; gaps: {_shown(windows)}"
        )


@dataclass(frozen=True)
class ServiceContinued:
    """Acknowledged sends went on through a window: no gap between them over `max_gap_s`.

    Parameters:
        start: the moment the window begins (`f1:start`).
        end: the moment it ends (`f1:end`); None: the end of the load (a slower target's
            longer load included).
        max_gap_s: the longest gap allowed between acknowledged sends, in seconds.
    """

    violation: ClassVar[str] = "unavailable>bound"

    start: str
    end: str | None
    max_gap_s: float = 2.0

    def unmet(self, facts: RunFacts) -> str | None:
        a = facts.moment(self.start)
        load_end = facts.metrics.load_end_s
        b = load_end if self.end is None else min(facts.moment(self.end), load_end)
        long = tuple(
            w
            for w in _windows(facts)
            if w.start_s < b and w.end_s > a and w.seconds > self.max_gap_s
        )
        if not long:
            return None
        end = "the load's end" if self.end is None else self.end
        return (
            f"service was interrupted between {self.start} and {end} "
            f"(gaps over {self.max_gap_s:g} s: {_shown(long)})"
        )


@dataclass(frozen=True)
class ServiceResumed:
    """The service came back within a bound after a moment: the gap in acknowledged sends
    that spans `after` ends within the bound (no gap: it never stopped). A load that ended
    before the bound cannot show it (`unknown`).

    Parameters:
        after: the moment (`f1:start`, `f1:end`).
        within_s: seconds no timeout covers: the brokers' and the clients' own work.
        terms: the run's timeouts the bound adds, by name: `silence` (how long the group
            waits on a silent node), `election`, `primary` (an election a designated
            primary wins alone), `reconnect` (the clients back on the new master), each
            valued from the run's settings (lab.judge.bounds); a bound counted from a
            node's restart (`f1:end` of a kill) also adds how long the node took to be
            ready.
        begins_within_s: a gap that begins up to this long after `after` counts too,
            timed from its beginning (a node stopped gracefully serves until it has closed).
    """

    violation: ClassVar[str] = "unavailable>bound"

    after: str
    within_s: float
    terms: tuple[str, ...] = ()
    begins_within_s: float = 0.0

    def unmet(self, facts: RunFacts) -> str | None:
        m = facts.moment(self.after)
        metrics = facts.metrics
        gap = next(
            (w for w in _windows(facts) if w.start_s <= m + self.begins_within_s and m < w.end_s),
            None,
        )
        if gap is None:  # the next acknowledged send came within the threshold
            return None
        timings = facts.timings or Timings.of(RunSpec(scenario="", seed=0), facts.target)
        restarted = facts.after_restart(self.after)
        seen = _ready_after(facts, self.after, m) if restarted else None
        bound = timings.bound(self.within_s, self.terms, restarted, seen)
        expected = f"expected within {bound.seconds:g} s" + (
            f" ({bound.describe()})" if len(bound.parts) > 1 else ""
        )
        master = _master_after(facts, m, self.after)
        if gap.end_s >= metrics.load_end_s - 1e-3:
            waited = metrics.load_end_s - m
            if waited < bound.seconds:  # the load ended first: the run cannot tell
                return (
                    f"{UNCHECKABLE} the load ended {waited:.2f} s after {self.after}{master}, "
                    f"before the service was due back ({expected})"
                )
            return f"service had not resumed {waited:.2f} s after {self.after}{master}, {expected}"
        waited = gap.end_s - max(m, gap.start_s)
        if waited <= bound.seconds:
            return None
        when = (
            f"{waited:.2f} s after {self.after}"
            if gap.start_s <= m
            else f"{waited:.2f} s after it stopped, {gap.start_s - m:.2f} s after {self.after}"
        )
        return f"service resumed {when}{master}, {expected}"


READY_CODE = "BRK-1004"  # Broker Ready (Broker-J's, and broker_ref's)


def _ready_after(facts: RunFacts, moment: str, since_s: float) -> Timing | None:
    """How long the node a restart started took to log that it was ready, if it did."""
    node = facts.node(moment.partition(":")[0])
    for line in facts.logs:
        if line.code == READY_CODE and line.node == node and line.time_s >= since_s:
            return Timing(round(line.time_s - since_s, 3), f"until {node}'s {READY_CODE}")
    return None


def _master_after(facts: RunFacts, since_s: float, moment: str) -> str:
    """` (n2 MASTER 13.90 s after f2:start)`: the first node to report MASTER after a moment,
    which tells where the wait went (the election, or the clients' way back); "" if none."""
    for o in facts.observed:
        if o.kind == "node.role" and o.time_s >= since_s and o.detail.get("role") == "MASTER":
            return f" ({o.node} MASTER {o.time_s - since_s:.2f} s after {moment})"
    return ""
