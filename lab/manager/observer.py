"""What the lab runs in place of its cluster manager when the brokers activate themselves (a
target like Artemis): it only watches.

Every `interval_s` it reads each broker's status over the target's management API (one
thread per broker, so a broker slow to answer holds up no other) and records each change as
the events a run is judged by:

    node.role   MASTER / REPLICA / WAITING, as the target maps its brokers' states
    node.ha     the HA status in the C++ broker's words (joining, ready, recovering, active)

A broker that does not answer (down, frozen, starting) changes nothing; one started again
(its `starts` count grew) has its next answer recorded whatever it is, since the run forgets
a restarted node's role.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from lab.ground.events import Events
from lab.ground.nodes import NodeStatus

__all__ = ["Seen", "StatusObserver", "Watched"]

INTERVAL_S = 0.2
TIMEOUT_S = 1.0


class Watched(Protocol):
    """The brokers as the observer sees them."""

    @property
    def node_names(self) -> tuple[str, ...]: ...

    def starts(self, name: str) -> int:
        """How many times the broker was started (a restart is a new life)."""
        ...

    def running(self, name: str) -> bool: ...

    def node_status(self, name: str, timeout_s: float) -> NodeStatus | None:
        """Its status now; None when it does not answer (or is not running)."""
        ...


class StatusObserver:
    def __init__(
        self,
        brokers: Watched,
        events: Events,
        interval_s: float = INTERVAL_S,
        wait: Callable[[threading.Event, float], bool] = lambda stop, s: stop.wait(s),
    ) -> None:
        self._brokers = brokers
        self._events = events
        self._interval_s = interval_s
        self._wait = wait
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def start(self) -> None:
        if self.running:
            return
        self._stop.clear()
        self._events.emit("observer.start", None)
        self._threads = [
            threading.Thread(target=self._watch, args=(name,), name=f"observe-{name}", daemon=True)
            for name in self._brokers.node_names
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        if not self._threads:
            return
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=TIMEOUT_S + 5.0)
        self._threads = []
        self._events.emit("observer.stop", None)

    def close(self) -> None:
        self.stop()

    def _watch(self, name: str) -> None:
        seen = Seen()
        while not self._stop.is_set():
            seen = self.observe(name, seen)
            self._wait(self._stop, self._interval_s)

    def observe(self, name: str, seen: Seen) -> Seen:
        """One look at broker `name`: what changed since `seen` emitted; what is seen now."""
        starts = self._brokers.starts(name)
        if starts != seen.life:
            seen = Seen(life=starts)
        found = self._brokers.node_status(name, TIMEOUT_S)
        if found is None or self._brokers.starts(name) != seen.life:
            return seen
        if not self._brokers.running(name):  # killed while it answered: it is no one now
            return seen
        role, status = seen.role, seen.status
        if found.role != role:
            self._events.emit("node.role", name, role=found.role, previous=role)
            role = found.role
        if found.ha_status is not None and found.ha_status != status:
            self._events.emit("node.ha", name, status=found.ha_status, previous=status)
            status = found.ha_status
        return Seen(role, status, seen.life)


@dataclass(frozen=True)
class Seen:
    """What the observer last recorded of a broker in its current life."""

    role: str | None = None
    status: str | None = None
    life: int = -1
