"""Proof of the group secret between two nodes. The dialler proves itself in its first frame,
so what it sends next is read at once, even on a link whose way back is cut; the listener
proves itself in its answer, and the dialler reads nothing else from it until it has.

    dialler  → listener  hello    {group, node: D, to: L, nonce: Nd, timestamp: T,
                                   proof: HMAC(secret, dialler | group | D | L | Nd | T)}
    listener → dialler   welcome  {node: L, nonce: Nl,
                                   proof: HMAC(secret, listener | group | D | L | Nd | Nl)}

Each proof is HMAC-SHA256 keyed by `group_secret` over a role label, the group, both node
names and the values shown (nonces are 32 random bytes, hex; T is the dialler's clock in
milliseconds), compared in constant time; the secret never crosses the wire. The listener
refuses a hello whose timestamp is more than WINDOW_S from its own clock (the nodes of a
group share a host or its containers, so one clock), and a hello whose nonce it already
accepted within that window (ReplayCache), so a recorded hello cannot be replayed; a proof
made for one group (its secret, its name) or one pair of nodes is worthless for another.
A peer that fails is refused, told why (code 320) and logged (REF-1009).

What this does not do: it authenticates who opened a connection, not every byte on it. A
dialler sends its frames before the listener has proved itself (that is what lets a link
come up one way), so whoever answers at a peer's address reads them; and a node on the path
can tamper with a plain TCP stream. `replication_tls` closes both.
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import hmac
import re
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from broker_ref.oplog import Code, OperationalLog
from broker_ref.peer_wire import write_message

__all__ = [
    "DIALLER",
    "HANDSHAKE_TIMEOUT_S",
    "HELLO_LIMIT",
    "HOLD_LIMIT",
    "LISTENER",
    "WINDOW_S",
    "AuthFailed",
    "ListenerCheck",
    "RefusalLog",
    "ReplayCache",
    "accept",
    "dial",
    "new_nonce",
    "proof",
]

HANDSHAKE_TIMEOUT_S = 5.0
HELLO_LIMIT = 64 * 1024  # no frame before the handshake is done may be larger
HOLD_LIMIT = 64  # frames a dialler holds while it waits for the listener's proof
WINDOW_S = 60.0  # how far a hello's timestamp may be from the listener's clock
REPLAY_CAPACITY = 4096  # nonces a listener remembers
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
DIALLER = "broker_ref-peer-dialler"
LISTENER = "broker_ref-peer-listener"

Clock = Callable[[], float]  # seconds since the epoch


class AuthFailed(Exception):
    """The other side did not prove it knows the group secret (the reason says how)."""


def new_nonce() -> str:
    return secrets.token_hex(32)


def proof(secret: str, role: str, group: str, dialler: str, listener: str, *values: str) -> str:
    """HMAC-SHA256 keyed by `secret` over the role label, the group, both names and `values`
    (the dialler's: its nonce and timestamp; the listener's: both nonces)."""
    text = "\0".join((role, group, dialler, listener, *values)).encode("utf-8")
    return hmac.new(secret.encode("utf-8"), text, hashlib.sha256).hexdigest()


def _matches(given: Any, expected: str) -> bool:
    if not isinstance(given, str) or not _HEX64.match(given):
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def _is_nonce(value: Any) -> bool:
    return isinstance(value, str) and bool(_HEX64.match(value))


class ReplayCache:
    """The nonces of the hellos a listener accepted within the window, so none is accepted
    twice. Bounded: when full it forgets the oldest and from then on refuses any hello no
    newer than it (a floor), so a forgotten nonce cannot come back."""

    def __init__(self, window_s: float = WINDOW_S, capacity: int = REPLAY_CAPACITY) -> None:
        self._window_ms = int(window_s * 1000)
        self._capacity = capacity
        self._heap: list[tuple[int, str]] = []
        self._seen: set[str] = set()
        self._floor = -1

    def __len__(self) -> int:
        return len(self._seen)

    @property
    def window_ms(self) -> int:
        return self._window_ms

    def admit(self, nonce: str, timestamp_ms: int, now_ms: int) -> bool:
        """Remember `nonce`; False when it was seen (or is too old to tell)."""
        oldest = now_ms - self._window_ms
        while self._heap and self._heap[0][0] < oldest:
            self._seen.discard(heapq.heappop(self._heap)[1])
        if nonce in self._seen or timestamp_ms <= self._floor:
            return False
        if len(self._heap) >= self._capacity:
            stamp, old = heapq.heappop(self._heap)
            self._seen.discard(old)
            self._floor = max(self._floor, stamp)
            if timestamp_ms <= self._floor:
                return False
        heapq.heappush(self._heap, (timestamp_ms, nonce))
        self._seen.add(nonce)
        return True


class ListenerCheck:
    """The dialler's side of one connection after its hello: the listener's frames are held
    until its welcome proves the secret, then handed on. Without a secret nothing is held."""

    def __init__(self, secret: str, group: str, me: str, peer: str, nonce: str) -> None:
        self._secret, self._group, self._me, self._peer = secret, group, me, peer
        self._nonce = nonce
        self.verified = not secret
        self._held: list[tuple[dict[str, Any], bytes]] = []

    def take(self, header: dict[str, Any], payload: bytes) -> list[tuple[dict[str, Any], bytes]]:
        """The frames to hand on now that `header` came; raises AuthFailed when the
        listener's proof is wrong, or it sent too much without one."""
        if self.verified:
            return [(header, payload)]
        if header.get("type") != "welcome":
            if len(self._held) >= HOLD_LIMIT:
                raise AuthFailed("sent too much before proving the group secret")
            self._held.append((header, payload))
            return []
        nl = header.get("nonce")
        expected = proof(
            self._secret, LISTENER, self._group, self._me, self._peer, self._nonce, str(nl)
        )
        if (
            header.get("node") != self._peer
            or not _is_nonce(nl)
            or not _matches(header.get("proof"), expected)
        ):
            raise AuthFailed("did not prove the group secret")
        self.verified = True
        held, self._held = self._held, []
        return held


def dial(
    writer: asyncio.StreamWriter,
    secret: str,
    hello: dict[str, Any],
    peer: str,
    clock: Clock = time.time,
) -> ListenerCheck:
    """The dialler's side: send `hello` to `peer`, with a nonce, a timestamp and the proof
    when there is a secret. What it sends next is read at once; what comes back goes
    through the returned check."""
    group, me = str(hello["group"]), str(hello["node"])
    if not secret:
        write_message(writer, hello)
        return ListenerCheck("", group, me, peer, "")
    nd, stamp = new_nonce(), str(int(clock() * 1000))
    mine = proof(secret, DIALLER, group, me, peer, nd, stamp)
    write_message(
        writer, {**hello, "to": peer, "nonce": nd, "timestamp": int(stamp), "proof": mine}
    )
    return ListenerCheck(secret, group, me, peer, nd)


def accept(
    secret: str,
    group: str,
    me: str,
    hello: dict[str, Any],
    replays: ReplayCache,
    clock: Clock = time.time,
) -> dict[str, Any] | None:
    """The listener's side, once the peer's `hello` named a permitted node of this group:
    check its proof, its timestamp and that it is not a replay. Returns the welcome to send
    (None without a secret); raises AuthFailed."""
    if not secret:
        return None
    peer, nd, stamp = str(hello.get("node")), hello.get("nonce"), hello.get("timestamp")
    if not _is_nonce(nd) or type(stamp) is not int or not isinstance(hello.get("proof"), str):
        raise AuthFailed("no proof of the group secret offered")
    now_ms = int(clock() * 1000)
    if abs(now_ms - stamp) > replays.window_ms:
        off_s = max(-(10**12), min(stamp - now_ms, 10**12)) / 1000  # (a float, however far)
        raise AuthFailed(f"stale hello (its clock is {off_s:+.1f} s off)")
    if hello.get("to") != me:
        raise AuthFailed("hello made for another node")
    expected = proof(secret, DIALLER, group, peer, me, str(nd), str(stamp))
    if not _matches(hello.get("proof"), expected):
        raise AuthFailed("wrong proof of the group secret")
    if not replays.admit(str(nd), stamp, now_ms):
        raise AuthFailed("replayed hello")
    nl = new_nonce()
    mine = proof(secret, LISTENER, group, peer, me, str(nd), nl)
    return {"type": "welcome", "node": me, "nonce": nl, "proof": mine}


class RefusalLog:
    """Logs refusals (REF-1009 or REF-1010) without letting a flood of them flood the log:
    at most `burst` lines a window, then one line saying how many were left out. Safe to use
    from any thread."""

    def __init__(
        self, oplog: OperationalLog, code: Code, burst: int = 20, window_s: float = 10.0
    ) -> None:
        self._oplog = oplog
        self._code = code
        self._burst = burst
        self._window_s = window_s
        self._start = 0.0
        self._count = 0
        self._left_out = 0
        self._lock = threading.Lock()

    def refused(self, text: str) -> None:
        with self._lock:
            self._refused(text, time.monotonic())

    def _refused(self, text: str, now: float) -> None:
        if now - self._start >= self._window_s:
            if self._left_out:
                self._oplog.warn(self._code, f"{self._left_out} more refusals not logged")
            self._start, self._count, self._left_out = now, 0, 0
        self._count += 1
        if self._count <= self._burst:
            self._oplog.warn(self._code, text)
        else:
            self._left_out += 1
