"""A broker's status in an active-passive cluster, named as the C++ broker's HA module names
them (the C++ broker's active-passive chapter), and the transitions it allows.

    joining      newly started, not yet connected to a primary
    catchup      a backup connected to the primary, downloading its state
    ready        a backup fully caught up, ready to take over
    recovering   a newly promoted primary, waiting for the backups of the old one
    active       the primary, with its backups connected and caught up
    standalone   not part of a cluster

Allowed: standalone→joining, joining→catchup, joining→recovering (the first primary),
catchup→ready, ready→catchup (a new primary to catch up with), ready→recovering,
recovering→active. Any other transition is a fault in the broker: it stops, as the C++
broker does ("Illegal state transition").
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from broker_ref.oplog import Code, OperationalLog

__all__ = ["HaStatus", "IllegalTransition", "StatusTracker"]


class HaStatus(enum.Enum):
    JOINING = "joining"
    CATCHUP = "catchup"
    READY = "ready"
    RECOVERING = "recovering"
    ACTIVE = "active"
    STANDALONE = "standalone"

    @property
    def primary(self) -> bool:
        return self in (HaStatus.RECOVERING, HaStatus.ACTIVE)


_ALLOWED = {
    (HaStatus.STANDALONE, HaStatus.JOINING),
    (HaStatus.JOINING, HaStatus.CATCHUP),
    (HaStatus.JOINING, HaStatus.RECOVERING),
    (HaStatus.CATCHUP, HaStatus.READY),
    (HaStatus.READY, HaStatus.CATCHUP),
    (HaStatus.READY, HaStatus.RECOVERING),
    (HaStatus.RECOVERING, HaStatus.ACTIVE),
}


class IllegalTransition(Exception):
    """A status change the HA module does not allow."""


class StatusTracker:
    """A broker's status; every change is logged (REF-2001). Group thread only; `current`
    may be read from any thread."""

    def __init__(
        self,
        oplog: OperationalLog,
        initial: HaStatus = HaStatus.JOINING,
        on_change: Callable[[HaStatus], None] = lambda status: None,
    ) -> None:
        self._oplog = oplog
        self.current = initial
        self._on_change = on_change

    def change(self, status: HaStatus) -> None:
        """Take `status`, logging it; the current status again changes nothing. An illegal
        transition raises IllegalTransition, logged at error level."""
        old = self.current
        if status is old:
            return
        if (old, status) not in _ALLOWED:
            text = f"Illegal state transition : {old.value} -> {status.value}"
            self._oplog.error(Code.HA_STATUS, text)
            raise IllegalTransition(text)
        self.current = status
        self._oplog.info(Code.HA_STATUS, f"Status change : {old.value} -> {status.value}")
        self._on_change(status)
