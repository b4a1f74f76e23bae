"""What an armed fault waits for (lab.ground.faultops.TRIGGERS), read from the cluster.

    watch = Watch(cluster)
    armed = watch.arm(op)             at the op's time: what the cluster looks like now
    watch.look()                      once a poll: every node's status, read once for all
    armed.fired(watch.now)            has the thing it waits for happened since it was armed

A cluster that reports its nodes' statuses (`Reporting`: role, last transaction id,
active-passive status) answers every trigger; one that reports only roles (`Roled`) answers
`new-master` and `rejoined`; one that reports neither answers none, and an armed fault
strikes at its deadline. `caught-up` is decided node by node: one that reports an
active-passive status has caught up when it is `ready`; a replica of a group, when it is back
within LAG_TXNS transactions of the one master.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from faults.abilities import Reporting, Roled
from lab.ground.errors import LabError
from lab.ground.faultops import LAG_TXNS, FaultOp
from lab.ground.nodes import NodeStatus

__all__ = ["Armed", "Watch"]

MASTER = "MASTER"
REPLICA = "REPLICA"


@dataclass(frozen=True)
class _Node:
    role: str | None
    txid: int | None = None
    ha: str | None = None


Seen = Mapping[str, _Node]


def _of(status: NodeStatus | None) -> _Node:
    if status is None:
        return _Node(None)
    return _Node(status.role, status.last_transaction_id, status.ha_status)


def _masters(seen: Seen) -> set[str]:
    return {n for n, s in seen.items() if s.role == MASTER}


def _behind(seen: Seen) -> set[str]:
    """The nodes out or catching up now: down or out of the group, an active-passive broker
    joining or in catch-up, a replica LAG_TXNS or more behind the one master."""
    ahead = _master_txid(seen)
    return {name for name, s in seen.items() if _lagging(s, ahead)}


def _master_txid(seen: Seen) -> int | None:
    """The one master's last transaction id (None without exactly one master, or unknown)."""
    masters = _masters(seen)
    return seen[next(iter(masters))].txid if len(masters) == 1 else None


def _lagging(s: _Node, ahead: int | None) -> bool:
    if s.ha is not None:
        return s.ha in ("joining", "catchup")
    if s.role not in (MASTER, REPLICA):
        return True
    trailing = ahead is not None and s.txid is not None and ahead - s.txid >= LAG_TXNS
    return s.role == REPLICA and trailing


def _caught_up(seen: Seen, name: str) -> bool:
    """Whether `name` counts again: an active-passive backup `ready`, a replica of a group
    within LAG_TXNS of the one master (unknown without transaction ids: never)."""
    s = seen.get(name, _Node(None))
    if s.ha is not None:
        return s.ha == "ready"
    ahead = _master_txid(seen)
    if s.role != REPLICA or s.txid is None or ahead is None:
        return False
    return ahead - s.txid < LAG_TXNS


def _catching_up(seen: Seen) -> bool:
    if any(s.ha == "catchup" for s in seen.values()):
        return True
    ahead = _master_txid(seen)
    return ahead is not None and any(
        s.role == REPLICA and s.txid is not None and ahead - s.txid >= LAG_TXNS
        for s in seen.values()
    )


@dataclass
class Armed:
    """A start waiting for its trigger: since when, until when, and what it saw when armed."""

    op: FaultOp
    armed_s: float
    deadline_s: float
    masters: set[str]
    away: set[str] = field(default_factory=set)  # nodes seen out of the group since arming
    behind: set[str] = field(default_factory=set)  # nodes seen out or catching up since arming

    def fired(self, seen: Seen | None) -> bool:
        if seen is None:
            return False
        when = self.op.when
        if when == "new-master":
            return bool(_masters(seen) - self.masters)
        if when == "catchup":
            return _catching_up(seen)
        if when == "rejoined":
            back = {n for n in self.away if seen.get(n, _Node(None)).role == REPLICA}
            self.away |= {n for n, s in seen.items() if s.role not in (MASTER, REPLICA)}
            return bool(back)
        if when == "caught-up":
            caught = {n for n in self.behind if _caught_up(seen, n)}
            self.behind |= _behind(seen)
            return bool(caught)
        return False


class Watch:
    """Reads the cluster once a poll for every armed fault."""

    def __init__(self, cluster: object) -> None:
        self.cluster = cluster
        self.now: Seen | None = None

    def look(self) -> Seen | None:
        """Every node's status now (None when the cluster reports nothing, or not now)."""
        try:
            if isinstance(self.cluster, Reporting):
                self.now = {n: _of(s) for n, s in self.cluster.statuses().items()}
            elif isinstance(self.cluster, Roled):
                self.now = {n: _Node(r) for n, r in self.cluster.roles().items()}
            else:
                self.now = None
        except LabError:
            self.now = None
        return self.now

    def arm(self, op: FaultOp, at_s: float) -> Armed:
        seen = self.look() or {}
        away = {n for n, s in seen.items() if s.role not in (MASTER, REPLICA)}
        return Armed(op, at_s, at_s + op.within_s, _masters(seen), away, _behind(seen))
