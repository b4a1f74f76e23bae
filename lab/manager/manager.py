"""The cluster manager: what rgmanager does for the C++ broker's active-passive clusters
(the C++ broker's active-passive chapter, "The Cluster Resource Manager").

Every `status_poll_interval_s` it asks every broker for its HA status (waiting at most
`status_timeout` for each, all at once), then:

    a broker that is down           restarted (recovery=restart)               manager.restart
    a broker does not answer        stopped and restarted (a hung broker);     manager.fence
                                    a hung primary is stopped before another
                                    is promoted, so it cannot come back as one
    no primary                      promote exactly one: a ready backup; the  manager.promote
                                    first primary of a new cluster when every
                                    broker is joining (the last primary first)
    no candidate                    it gives up and says so (the cluster      manager.no-candidate
                                    hangs) until it is restarted
    a primary                       the virtual address points at it           manager.vip
    two primaries                   said, nothing done (only an operator       manager.two-primaries
                                    misusing promote makes one)

It never promotes a broker in catch-up. The manager itself is a fault target: stopped
(no polls), frozen (its thread stands still), started again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Protocol

from lab.ground.cluster_settings import ActivePassiveSettings
from lab.ground.errors import LabError
from lab.ground.events import Events

__all__ = ["DOWN", "STARTING", "Brokers", "ClusterManager"]

DOWN = "down"  # the broker's process or container is not running
STARTING = "starting"  # running, but refusing connections: not listening yet (or any more)
PRIMARY = ("recovering", "active")


class Brokers(Protocol):
    """What the manager drives: each broker's HA status, its life, promotion, the address."""

    @property
    def node_names(self) -> tuple[str, ...]: ...

    def running(self, name: str) -> bool:
        """The broker's process (or container) exists, frozen or not."""
        ...

    def ha_status(self, name: str, timeout_s: float) -> str | None:
        """Its HA status (joining, catchup, ready, recovering, active); STARTING when its
        management port refuses connections; None when it does not answer in time."""
        ...

    def restart(self, name: str) -> None: ...

    def fence(self, name: str) -> None:
        """Stop a broker that does not answer (kill -9, frozen or not), then start it."""
        ...

    def promote(self, name: str) -> None:
        """Ask the broker to become the primary; LabError when it refuses."""
        ...

    def point_vip(self, name: str) -> None:
        """The virtual address reaches `name` from now on."""
        ...


class ClusterManager:
    def __init__(
        self,
        brokers: Brokers,
        settings: ActivePassiveSettings,
        events: Events,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._brokers = brokers
        self._settings = settings
        self._events = events
        self._sleep = sleep
        self._primary: str | None = None  # the broker this manager made primary last
        self._vip: str | None = None
        self._gave_up = False
        self._two: frozenset[str] = frozenset()
        self._stop = threading.Event()
        self._thawed = threading.Event()
        self._thawed.set()
        self._round = threading.Lock()  # held through one round of decisions
        self._thread: threading.Thread | None = None
        # Room for checks that outlive their round (a slow name lookup) beside new ones.
        self._pool = ThreadPoolExecutor(max_workers=4 * max(1, len(brokers.node_names)))

    # ---- life ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start polling (again): a manager started anew tries to promote again."""
        if self.running:
            return
        self._stop.clear()
        self._thawed.set()
        self._gave_up = False
        self._events.emit("manager.start", None)  # before any decision it takes
        self._thread = threading.Thread(target=self._loop, name="cluster-manager", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thawed.set()
        self._thread.join(timeout=10 + self._settings.status_timeout)
        self._thread = None
        self._events.emit("manager.stop", None)

    def freeze(self) -> None:
        """The manager stands still (a hung rgmanager) until `thaw`: a round under way
        ends first, and no decision is taken after this returns."""
        with self._round:
            if not self._thawed.is_set():
                return
            self._thawed.clear()
            self._events.emit("manager.freeze", None)

    def thaw(self) -> None:
        if not self._thawed.is_set():
            self._thawed.set()
            self._events.emit("manager.thaw", None)

    def close(self) -> None:
        self.stop()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._thawed.wait()
            if self._stop.is_set():
                return
            with self._round:
                if not self._thawed.is_set():
                    continue
                try:
                    self.poll()
                except LabError as exc:  # a broker or Toxiproxy failed to answer an order
                    self._events.emit("manager.error", None, error=str(exc))
            self._stop.wait(self._settings.status_poll_interval_s)

    # ---- one round -------------------------------------------------------------------------

    def statuses(self) -> dict[str, str | None]:
        """Every broker's status, asked all at once: DOWN when not running, None when it
        does not answer within the status timeout."""
        brokers = self._brokers
        timeout = self._settings.status_timeout

        def ask(name: str) -> str | None:
            if not brokers.running(name):
                return DOWN
            return brokers.ha_status(name, timeout)

        names = brokers.node_names
        asked = {name: self._pool.submit(ask, name) for name in names}
        # A check that takes longer than the timeout (a name that no longer resolves, a
        # connect that hangs) is no answer: the round goes on without it.
        wait(asked.values(), timeout=timeout + 0.5)
        return {name: _answer(future) for name, future in asked.items()}

    def poll(self) -> None:
        """One round of the manager's decisions: hung brokers fenced, a primary chosen, then
        crashed brokers restarted (a restart never holds up the promotion)."""
        statuses = self.statuses()
        brokers = self._brokers
        for name, status in statuses.items():
            if status is None:
                # Hung: stopped and started again, before anything else is decided, so a
                # hung primary cannot come back as a second one.
                brokers.fence(name)
                self._events.emit("manager.fence", name, timeout_s=self._settings.status_timeout)
                statuses[name] = STARTING
                if name == self._primary:
                    self._primary = None
        try:
            self._choose_primary(statuses)
        finally:
            for name, status in statuses.items():
                if status == DOWN and self._settings.restart:
                    brokers.restart(name)
                    self._events.emit("manager.restart", name)

    def _choose_primary(self, statuses: Mapping[str, str | None]) -> None:
        primaries = sorted(n for n, s in statuses.items() if s in PRIMARY)
        if len(primaries) > 1 and frozenset(primaries) != self._two:
            self._two = frozenset(primaries)
            self._events.emit("manager.two-primaries", None, primaries=primaries)
        if primaries:
            chosen = self._primary if self._primary in primaries else primaries[0]
            self._primary = chosen
            self._point(chosen)
            return
        if self._gave_up:
            return
        candidate = self._candidate(statuses)
        if candidate is None:
            if any(s in (DOWN, STARTING) for s in statuses.values()):
                return  # brokers still coming up: decide when every one answers
            self._gave_up = True
            self._events.emit("manager.no-candidate", None, statuses=_shown(statuses))
            return
        self._brokers.promote(candidate)
        self._primary = candidate
        self._events.emit("manager.promote", candidate, statuses=_shown(statuses))
        self._point(candidate)

    def _candidate(self, statuses: Mapping[str, str | None]) -> str | None:
        """A ready backup; when every broker answers joining (a new cluster, or one restarted
        whole), the last primary, else the first by name; otherwise none."""
        ready = sorted(n for n, s in statuses.items() if s == "ready")
        if ready:
            return ready[0]
        if statuses and all(s == "joining" for s in statuses.values()):
            return self._primary if self._primary in statuses else sorted(statuses)[0]
        return None

    def _point(self, name: str) -> None:
        if self._vip != name:
            self._brokers.point_vip(name)
            self._vip = name
            self._events.emit("manager.vip", name)


def _answer(future: Future[str | None]) -> str | None:
    """A status check's answer: None when it did not end in time; STARTING when it failed
    otherwise (an answer the manager cannot read: it waits for the next round)."""
    if not future.done():
        return None
    return STARTING if future.exception() is not None else future.result()


def _shown(statuses: Mapping[str, str | None]) -> dict[str, str]:
    return {n: s or "no answer" for n, s in sorted(statuses.items())}
