"""What the Java broker's group predictions assert of elections and of the client history
(docs/scenarios.md J1, J6, J9), each a small frozen value like those of expectations.py.

    ElectedMostRecent(fault)              the node elected after kill `fault` held the most
                                          recent transaction among the survivors (J1)
    InFlightSendsSettled(fault)           sends in flight when `fault` took its node out end
                                          fail or info, or ok with the message received (J6)
    AcknowledgedByNewMaster(node, after)  once `node` is master (after `after`), every
                                          acknowledged send comes from it (J9)

The transaction ids come from `node.txid` events: the nemesis reads each node's
`lastKnownReplicationTransactionId` just before a kill (`moment` before) and once the node
is dead (`moment` after: the survivors' ids, frozen until a new master commits). Sends come
from the history (RunFacts.history): each invoke paired with the completion that follows it
for the same process and message id; a completion carries the node the client was on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import pyarrow.compute as pc

from lab.judge.expectations import UNCHECKABLE
from lab.judge.facts import Observation, RunFacts
from lab.judge.metrics import NS

__all__ = [
    "AcknowledgedByNewMaster",
    "ElectedMostRecent",
    "InFlightSendsSettled",
    "SendOp",
    "send_ops",
]


@dataclass(frozen=True)
class SendOp:
    """One send: its invoke and completion (`outcome` None: none was recorded, so unknown)."""

    process: str
    value: str
    invoked_s: float
    completed_s: float | None
    outcome: str | None
    node: str | None  # where the completion was recorded (the node the client was on)

    def in_flight_at(self, moment_s: float, until_s: float | None = None) -> bool:
        """Invoked before the moment (or before `until_s`: a moment known only to lie in
        [moment_s, until_s]) and not completed before `moment_s`."""
        return self.invoked_s < (until_s or moment_s) and (
            self.completed_s is None or self.completed_s >= moment_s
        )


def send_ops(facts: RunFacts) -> tuple[SendOp, ...] | None:
    """Every send of the history, invoke and completion paired; None without a history."""
    history = facts.history
    if history is None:
        return None
    sends = history.filter(pc.equal(history["f"], "send"))  # in file order
    nodes = sends["node"].to_pylist() if "node" in sends.column_names else [None] * sends.num_rows
    rows = zip(
        sends["time"].to_pylist(),
        sends["process"].to_pylist(),
        sends["type"].to_pylist(),
        sends["value"].to_pylist(),
        nodes,
        strict=True,
    )
    open_: dict[tuple[str, str], float] = {}
    done: list[SendOp] = []
    for time_ns, process, kind, value, node in rows:
        key = (str(process), str(value))
        if kind == "invoke":
            if key in open_:  # an invoke never completed, then invoked again
                done.append(SendOp(key[0], key[1], open_[key], None, None, None))
            open_[key] = int(time_ns) / NS
        elif key in open_:
            invoked = open_.pop(key)
            done.append(SendOp(key[0], key[1], invoked, int(time_ns) / NS, str(kind), node))
    done.extend(SendOp(p, v, t, None, None, None) for (p, v), t in open_.items())
    return tuple(sorted(done, key=lambda s: s.invoked_s))


def _received(facts: RunFacts) -> set[str]:
    history = facts.history
    if history is None:
        return set()
    ok = pc.and_(pc.equal(history["f"], "receive"), pc.equal(history["type"], "ok"))
    return {str(v) for v in history.filter(ok)["value"].to_pylist() if v is not None}


def _first(facts: RunFacts, kind: str, since_s: float, node: str | None = None) -> float | None:
    """When `node` (None: any) first showed `kind` at or after `since_s`."""
    return next(
        (
            o.time_s
            for o in facts.observed
            if o.kind == kind and o.time_s >= since_s and (node is None or o.node == node)
        ),
        None,
    )


def _became_master(facts: RunFacts, since_s: float) -> Observation | None:
    return next(
        (
            o
            for o in sorted(facts.observed, key=lambda o: o.time_s)
            if o.kind == "node.role" and o.detail.get("role") == "MASTER" and o.time_s >= since_s
        ),
        None,
    )


def _txids(facts: RunFacts, fault_id: str, moment: str) -> Mapping[str, int]:
    return {
        str(o.node): int(o.detail["txid"])
        for o in facts.observed
        if o.kind == "node.txid"
        and o.node is not None
        and o.detail.get("fault") == fault_id
        and o.detail.get("moment") == moment
        and isinstance(o.detail.get("txid"), int)
    }


def _shown(ids: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {t}" for n, t in sorted(ids.items())) or "none"


@dataclass(frozen=True)
class ElectedMostRecent:
    """The first node to become MASTER after kill `fault` held, when the killed node was dead,
    a transaction id at least that of every other survivor (ties allowed: "one with the most
    recent transaction")."""

    violation: ClassVar[str] = "elected-behind"

    fault: str

    def unmet(self, facts: RunFacts) -> str | None:
        found = facts.fault(self.fault)
        survivors = _txids(facts, found.id, "after")
        if not survivors:
            return (
                f"{UNCHECKABLE} no node reported its last transaction id when {found.target} "
                f"({self.fault}) was killed: {facts.target.name}'s management API gave none"
            )
        elected = _became_master(facts, found.start_s)
        if elected is None or elected.node is None:
            return f"no node became MASTER after {self.fault}:start"
        name = elected.node
        before = _txids(facts, found.id, "before")
        held = f"(at the kill: {_shown(survivors)}; just before it: {_shown(before)})"
        if name == found.target:
            return f"no survivor was elected: {name}, the node killed, was MASTER again {held}"
        if name not in survivors:
            return f"{name} became MASTER but reported no transaction id at the kill {held}"
        best = max(survivors.values())
        if survivors[name] >= best:
            return None
        ahead = sorted(n for n, t in survivors.items() if t == best)
        return (
            f"{name} was elected holding transaction {survivors[name]}, but "
            f"{', '.join(ahead)} held {best} when {found.target} was killed {held}"
        )


@dataclass(frozen=True)
class InFlightSendsSettled:
    """Every send in flight when fault `fault` took its node out ends fail or info, or ok
    with its message received. The node died between the lab's last reading before the kill
    (its `node.txid` events, else the fault's start) and its `node.kill` event (on processes
    once it was reaped, after the clients may have seen the connection drop; in containers
    when the kill was ordered): a send invoked before the death and not completed before
    that reading counts as in flight."""

    violation: ClassVar[str] = "in-flight-acknowledged-lost"

    fault: str

    def unmet(self, facts: RunFacts) -> str | None:
        sends = send_ops(facts)
        if sends is None:
            return f"{UNCHECKABLE} the history was not given to the judge"
        found = facts.fault(self.fault)
        read = [
            o.time_s
            for o in facts.observed
            if o.kind == "node.txid" and o.detail.get("fault") == found.id
            if o.detail.get("moment") == "before"
        ]
        at = max(read, default=found.start_s)
        died = _first(facts, "node.kill", found.start_s, found.target)
        in_flight = [s for s in sends if s.in_flight_at(at, died)]
        received = _received(facts)
        lost = sorted({s.value for s in in_flight if s.outcome == "ok"} - received)
        if not lost:
            return None
        shown = ", ".join(lost[:5])
        return (
            f"{len(lost)} of the {len(in_flight)} send(s) in flight when {found.target} "
            f"({self.fault}) was killed (from {at:.2f} s) were acknowledged and never "
            f"received: {shown}"
        )


@dataclass(frozen=True)
class AcknowledgedByNewMaster:
    """Once the master steps down after moment `after` (its first role change away from
    MASTER; else once `node` reports MASTER), every send invoked from then on that is
    acknowledged is acknowledged by `node`, the new master: the old master takes no new
    transaction (the ones it had suspended abort: sends in flight end fail or info and are
    re-sent; one it had committed before stepping down may still be acknowledged on its
    way back to the client), and the clients reconnected to the new master (at least one
    send acknowledged by it)."""

    violation: ClassVar[str] = "acknowledged-by-old-master"

    node: str
    after: str

    def unmet(self, facts: RunFacts) -> str | None:
        sends = send_ops(facts)
        if sends is None:
            return f"{UNCHECKABLE} the history was not given to the judge"
        name = facts.node(self.node)
        since = facts.moment(self.after)
        roles = [o for o in facts.observed if o.kind == "node.role" and o.time_s >= since]
        took = next((o for o in roles if o.node == name and o.detail.get("role") == "MASTER"), None)
        if took is None:
            return f"{name} ({self.node}) never became MASTER after {self.after}"
        down = next((o for o in roles if o.detail.get("previous") == "MASTER"), None)
        moment = took.time_s if down is None or down.time_s > took.time_s else down.time_s
        after = [s for s in sends if s.outcome == "ok" and (s.completed_s or 0.0) >= moment]
        if after and all(s.node is None for s in after):
            return f"{UNCHECKABLE} the history does not say which node acknowledged a send"
        elsewhere = [
            s for s in after if s.node is not None and s.node != name and s.invoked_s >= moment
        ]
        in_flight = [s for s in sends if s.in_flight_at(moment)]
        settled = [s for s in in_flight if s.outcome != "ok"]
        resent = {s.value for s in after if s.node == name} & {s.value for s in settled}
        stepped = "" if down is None else f"{down.node} stepped down at {down.time_s:.2f} s, "
        when = (
            f"{stepped}{name} became MASTER at {took.time_s:.2f} s; {len(settled)} of "
            f"{len(in_flight)} send(s) in flight then ended fail or info ({len(resent)} re-sent "
            f"and acknowledged by {name})"
        )
        if elsewhere:
            nodes = ", ".join(sorted({str(s.node) for s in elsewhere}))
            first = elsewhere[0]
            return (
                f"{len(elsewhere)} send(s) invoked after the transfer acknowledged by {nodes}: "
                f"{when} "
                f"(first {first.value} at {first.completed_s or 0.0:.2f} s)"
            )
        if not any(s.node == name for s in after):
            return f"no send was acknowledged by {name} after the transfer: {when}"
        return None
