"""Limits on the AMQP port: how many connections, how long a handshake, how much logging.

A connection counts from the moment its socket is accepted. Up to `max_connections` are
admitted; each must complete the AMQP handshake (protocol header, SASL if any, `open`)
within `handshake_timeout_s`, or its socket is closed. A connection over the cap is
refused: if its `open` arrives within `CLOSING_GRACE_S` it is answered with `open` and
`close` carrying amqp:resource-limit-exceeded, and either way its socket is closed once
the grace is over. Refused connections waiting for their grace are themselves capped at
`max_connections`; beyond that a socket is closed at once. So a flood holds at most twice
the cap in sockets, whatever the peers do.

Bytes that are not AMQP (a wrong header, HTTP, a malformed or oversized frame) are
proton's to reject: it answers with amqp:connection:framing-error and closes. This
module logs such errors, as it logs refusals and timeouts: the first of a burst on its own
line, the rest as one count when the burst's window ends. One case proton leaves open: a
complete frame that is not a performative it knows makes it stop reading silently, and the
socket would stay until the peer's patience ran out. When a peer's input ends without a
`close` frame, the connection is closed with amqp:connection:framing-error, and any socket
whose input has ended is closed for good `CLOSING_GRACE_S` later, written out or not.

`Gate` and `BurstLog` are plain bookkeeping with the time passed in; `ConnectionGuard`
applies them to proton transports in the reactor thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from proton import Condition, Connection, Endpoint, Event, Transport
from proton.reactor import Container

from broker_ref.oplog import Code, OperationalLog
from broker_ref.proton_events import Timer

__all__ = [
    "CLOSING_GRACE_S",
    "LIMIT_EXCEEDED",
    "BurstLog",
    "ConnectionGuard",
    "ConnectionLimits",
    "Gate",
    "Verdict",
]

LIMIT_EXCEEDED = "amqp:resource-limit-exceeded"
FRAMING_ERROR = "amqp:connection:framing-error"
CLOSING_GRACE_S = 1.0
LOG_WINDOW_S = 10.0
SWEEP_INTERVAL_S = 0.25

K = TypeVar("K", bound=Hashable)
Verdict = Literal["admitted", "refused", "dropped"]


@dataclass(frozen=True)
class ConnectionLimits:
    """The AMQP port's limits (config keys `max_connections`, `handshake_timeout_s`)."""

    max_connections: int = 1000
    handshake_timeout_s: float = 10.0
    closing_grace_s: float = CLOSING_GRACE_S
    log_window_s: float = LOG_WINDOW_S


class Gate(Generic[K]):
    """Which connections are admitted, which refused, and whose time is up.

    Deadlines are kept in arrival order: with one timeout per kind and a clock that does
    not go back, the oldest deadline is always first, so `overdue` looks only at the front.
    """

    def __init__(self, limits: ConnectionLimits) -> None:
        self._limits = limits
        self._admitted: set[K] = set()
        self._refused: set[K] = set()
        self._handshakes: dict[K, float] = {}  # admitted, not open yet: deadline
        self._graces: dict[K, float] = {}  # refused or input ended, not closed yet: deadline

    @property
    def admitted(self) -> int:
        return len(self._admitted)

    @property
    def refused(self) -> int:
        return len(self._refused)

    @property
    def handshaking(self) -> int:
        return len(self._handshakes)

    def arrive(self, key: K, now: float) -> Verdict:
        """A socket was accepted: admit it, refuse it (with grace), or drop it at once."""
        if len(self._admitted) < self._limits.max_connections:
            self._admitted.add(key)
            self._handshakes[key] = now + self._limits.handshake_timeout_s
            return "admitted"
        if len(self._refused) < self._limits.max_connections:
            self._refused.add(key)
            self._graces[key] = now + self._limits.closing_grace_s
            return "refused"
        return "dropped"

    def open(self, key: K) -> bool:
        """The peer's `open` arrived: True if the connection may be served."""
        self._handshakes.pop(key, None)
        return key in self._admitted

    def gone(self, key: K) -> None:
        """The socket is closed: its place is free."""
        self._admitted.discard(key)
        self._refused.discard(key)
        self._handshakes.pop(key, None)
        self._graces.pop(key, None)

    def winding_down(self, key: K, now: float) -> None:
        """The peer will send nothing more: what is left to write gets a grace, no more."""
        if key in self._admitted or key in self._refused:
            self._handshakes.pop(key, None)
            self._graces.setdefault(key, now + self._limits.closing_grace_s)

    def overdue(self, now: float) -> tuple[list[K], list[K]]:
        """(handshakes not completed in time, connections whose closing grace is over);
        each is returned once and stays counted until `gone`."""
        return _pop_due(self._handshakes, now), _pop_due(self._graces, now)

    def tracked(self) -> list[K]:
        return [*self._admitted, *self._refused]


def _pop_due(deadlines: dict[K, float], now: float) -> list[K]:
    due = []
    for key, deadline in deadlines.items():
        if deadline > now:
            break
        due.append(key)
    for key in due:
        del deadlines[key]
    return due


@dataclass
class _Burst:
    started: float
    more: int = 0


class BurstLog:
    """Logs the first event of a kind, then counts the rest until `window_s` has passed."""

    def __init__(self, window_s: float) -> None:
        self._window_s = window_s
        self._bursts: dict[str, _Burst] = {}

    def note(self, kind: str, now: float, count: int = 1) -> bool:
        """`count` events of `kind` happened: True if they start a burst (log them now).
        Call `ended` first, so that a burst whose window is over is reported, not lost."""
        burst = self._bursts.get(kind)
        if burst is None or now - burst.started >= self._window_s:
            self._bursts[kind] = _Burst(now)
            return True
        burst.more += count
        return False

    def ended(self, now: float) -> list[tuple[str, int, float]]:
        """(kind, events not logged, seconds) of each burst whose window is over."""
        over = []
        for kind, burst in list(self._bursts.items()):
            if now - burst.started < self._window_s:
                continue
            del self._bursts[kind]
            if burst.more:
                over.append((kind, burst.more, now - burst.started))
        return over


class ConnectionGuard:
    """Applies the limits to the connections of one acceptor; reactor thread only."""

    def __init__(
        self,
        container: Container,
        limits: ConnectionLimits,
        oplog: OperationalLog,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._container = container
        self._limits = limits
        self._oplog = oplog
        self._clock = clock
        self.gate: Gate[Transport] = Gate(limits)
        self._log = BurstLog(limits.log_window_s)
        self._closed_by_us: set[Transport] = set()
        self._peers: dict[Transport, str] = {}  # "host:port" of every tracked socket

    def start(self, stopped: Callable[[], bool]) -> None:
        """Check deadlines every SWEEP_INTERVAL_S until `stopped()`."""

        def sweep() -> None:
            if stopped():
                return
            self.sweep()
            self._container.schedule(SWEEP_INTERVAL_S, Timer(sweep))

        self._container.schedule(SWEEP_INTERVAL_S, Timer(sweep))

    # ---- the server's hooks ------------------------------------------------------------------

    def bound(self, event: Event) -> None:
        """A socket was accepted and given a transport."""
        transport, connection = event.transport, event.connection
        if transport is None or connection is None or not _accepted(connection):
            return
        now = self._clock()
        verdict = self.gate.arrive(transport, now)
        if verdict != "dropped":
            url = connection.url
            self._peers[transport] = f"{url.host}:{url.port}" if url is not None else "unknown"
        if verdict == "admitted":
            return
        if verdict == "dropped":
            self._close(transport, "over max_connections")
        if self._note("refused", now):
            self._oplog.warn(
                Code.CONNECTION_LIMIT,
                f"Connection limit : {self.gate.admitted} connections open"
                f" (max_connections {self._limits.max_connections}) : refusing new connections",
            )

    def admit(self, connection: Connection) -> bool:
        """The peer's `open` arrived: True to serve it; False: it has been refused."""
        transport = connection.transport
        if transport is None or not _accepted(connection) or self.gate.open(transport):
            return True
        connection.condition = Condition(
            LIMIT_EXCEEDED,
            f"connection limit reached (max_connections {self._limits.max_connections})",
        )
        connection.open()
        connection.close()
        return False

    def transport_error(self, event: Event) -> None:
        """Log a transport's error (a framing error, an aborted socket), a burst at a time."""
        transport = event.transport
        if transport is None or transport in self._closed_by_us:
            return
        condition = transport.condition
        if condition is None:
            return
        if self._note(f"error {condition.name}", self._clock()):
            peer = self._peers.get(transport, "unknown")
            self._oplog.warn(
                Code.CONNECTION_ERROR,
                f"Connection error : Peer : {peer} : {condition.name} : {condition.description}",
            )

    def tail_closed(self, event: Event) -> None:
        """The peer's input ended: close the connection if the peer did not, and give what
        is left to write a grace."""
        transport, connection = event.transport, event.connection
        if transport is None or transport.closed or transport in self._closed_by_us:
            return
        now = self._clock()
        self.gate.winding_down(transport, now)
        if transport.condition is not None:  # proton's own error: it has closed, and said why
            return
        if connection is None or connection.state & Endpoint.REMOTE_CLOSED:
            return
        if connection.state & (Endpoint.LOCAL_UNINIT | Endpoint.LOCAL_ACTIVE):
            connection.condition = Condition(FRAMING_ERROR, "input ended without a close frame")
            connection.close()
        if self._note(f"error {FRAMING_ERROR}", now):
            self._oplog.warn(
                Code.CONNECTION_ERROR,
                f"Connection error : Peer : {self._peers.get(transport, 'unknown')} :"
                f" {FRAMING_ERROR} : input ended without a close frame",
            )

    def closed(self, event: Event) -> None:
        transport = event.transport
        if transport is not None:
            self._forget(transport)

    # ---- deadlines ---------------------------------------------------------------------------

    def sweep(self) -> None:
        """Close what is overdue; forget sockets proton closed without telling us; log the
        bursts that ended."""
        now = self._clock()
        for transport in self.gate.tracked():
            if transport.closed and transport not in self._closed_by_us:
                self._forget(transport)
        late, closing = self.gate.overdue(now)
        timeout = self._limits.handshake_timeout_s
        for transport in late:
            self._close(transport, f"AMQP handshake not completed within {timeout:g} s")
        for transport in closing:
            self._close(transport, "closing grace over")
        if late and self._note("handshake", now, len(late)):
            self._oplog.warn(
                Code.HANDSHAKE_TIMEOUT,
                f"Handshake timeout : closed {len(late)} connections that sent no AMQP open"
                f" within {timeout:g} s",
            )
        self._note_ended(now)

    def _note(self, kind: str, now: float, count: int = 1) -> bool:
        self._note_ended(now)
        return self._log.note(kind, now, count)

    def _note_ended(self, now: float) -> None:
        for kind, count, seconds in self._log.ended(now):
            self._log_summary(kind, count, seconds)

    def _log_summary(self, kind: str, count: int, seconds: float) -> None:
        if kind == "refused":
            self._oplog.warn(
                Code.CONNECTION_LIMIT,
                f"Connection limit : refused {count} more connections in {seconds:.1f} s",
            )
        elif kind == "handshake":
            self._oplog.warn(
                Code.HANDSHAKE_TIMEOUT,
                f"Handshake timeout : closed {count} more connections in {seconds:.1f} s",
            )
        else:
            name = kind.removeprefix("error ")
            self._oplog.warn(
                Code.CONNECTION_ERROR,
                f"Connection error : {count} more connections closed with {name}"
                f" in {seconds:.1f} s",
            )

    def _forget(self, transport: Transport) -> None:
        self.gate.gone(transport)
        self._closed_by_us.discard(transport)
        self._peers.pop(transport, None)

    def _close(self, transport: Transport, why: str) -> None:
        """Close the socket now, whatever the peer has or has not sent."""
        if transport.closed:
            return
        self._closed_by_us.add(transport)
        transport.condition = Condition(LIMIT_EXCEEDED, why)
        transport.close_tail()
        transport.close_head()


def _accepted(connection: Connection) -> bool:
    """A connection a client opened to us (not one this node opened)."""
    return bool(getattr(connection, "_acceptor", None))
