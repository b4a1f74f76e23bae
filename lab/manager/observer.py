"""What the lab runs in place of its cluster manager when the brokers activate themselves (a
target like Artemis): it only watches.

Every `interval_s` it reads each broker's status over the target's management API (one
thread per broker, so a broker slow to answer holds up no other) and records each change as
the events a run is judged by:

    node.role   MASTER / REPLICA / WAITING, as the target maps its brokers' states
    node.ha     the HA status in the C++ broker's words (joining, ready, recovering, active)

A change is a change from what the run last recorded of the broker (`NodeStates`): the
brokers' own log lines may record some first (a target's log reader can say that a line is
its broker taking a role or a status, lab.targets.log_lines.LogRecord), and a broker started
again has nothing recorded. A broker that does not answer (down, frozen, starting) changes
nothing; an answer from a broker killed or started again while it was asked is dropped, and
so is one asked before the run last recorded a change of that broker (it is older news).
A look that fails (the lab's own proxies not answering as they should, say) is recorded as
`observer.error` with what failed, once per broker and error, and the next look is made as
usual: a watching thread never ends before the run stops it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from lab.ground.errors import LabError
from lab.ground.events import Events
from lab.ground.nodes import NodeStatus

__all__ = ["NodeStates", "StatusObserver", "Watched"]

INTERVAL_S = 0.2
TIMEOUT_S = 1.0
_NEW_LIFE = ("node.start", "node.kill", "node.stop", "node.exit")


class NodeStates:
    """Events as the run records them, remembering each node's last role (`node.role`) and
    HA status (`node.ha`) in its current life; an event that says again what is recorded is
    not repeated."""

    def __init__(self, events: Events) -> None:
        self._events = events
        self._lock = threading.Lock()
        self._roles: dict[str, Any] = {}
        self._statuses: dict[str, Any] = {}
        self._changed: dict[str, float] = {}  # when each node's last change was recorded

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        with self._lock:
            self._emit(kind, node, **fields)

    def answered(self, node: str, asked_at: float, role: str, status: str | None) -> None:
        """A node's answer to a status check asked at `asked_at` (time.monotonic()): its
        role and status recorded, unless a change of the node was recorded since."""
        with self._lock:
            if self._changed.get(node, 0.0) > asked_at:
                return
            self._emit("node.role", node, role=role)
            if status is not None:
                self._emit("node.ha", node, status=status)

    def _emit(self, kind: str, node: str | None, **fields: Any) -> None:
        if node is not None and kind in _NEW_LIFE:
            self._roles.pop(node, None)
            self._statuses.pop(node, None)
            self._changed[node] = time.monotonic()
        elif node is not None and kind in ("node.role", "node.ha"):
            book, key = (self._roles, "role") if kind == "node.role" else (self._statuses, "status")
            if node in book and book[node] == fields.get(key):
                return
            fields = {"previous": book.get(node), **fields}  # unless the event says it
            book[node] = fields.get(key)
            self._changed[node] = time.monotonic()
        self._events.emit(kind, node, **fields)

    def last(self, node: str) -> tuple[str | None, str | None]:
        """The node's recorded role and HA status (None: none in its current life)."""
        with self._lock:
            return self._roles.get(node), self._statuses.get(node)


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
        states: NodeStates,
        interval_s: float = INTERVAL_S,
        wait: Callable[[threading.Event, float], bool] = lambda stop, s: stop.wait(s),
    ) -> None:
        self._brokers = brokers
        self._states = states
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
        self._states.emit("observer.start", None)
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
        self._states.emit("observer.stop", None)

    def close(self) -> None:
        self.stop()

    def _watch(self, name: str) -> None:
        said: set[str] = set()
        while not self._stop.is_set():
            try:
                self.observe(name)
            except LabError as exc:  # the next look may do; say each failure once
                if str(exc) not in said:
                    said.add(str(exc))
                    self._states.emit("observer.error", name, error=str(exc))
            self._wait(self._stop, self._interval_s)

    def observe(self, name: str) -> None:
        """One look at broker `name`: what changed since the run last recorded it, emitted."""
        starts = self._brokers.starts(name)
        asked_at = time.monotonic()
        found = self._brokers.node_status(name, TIMEOUT_S)
        if found is None or self._brokers.starts(name) != starts:
            return
        if not self._brokers.running(name):  # killed while it answered: it is no one now
            return
        self._states.answered(name, asked_at, found.role, found.ha_status)
