"""A node's membership of its group: the group thread, and what every mode shares.

Runs in its own thread with its own event loop. It decides; the reactor thread acts
(through `StoreSide`, whose calls are posted to the reactor): store and apply records,
roll back, serve or stop serving clients.

    contact.py     who this node hears from, and whether it stalled itself
    feeds.py       the master's side of the replication stream
    follower.py    the replica's side of it
    self_elected   the replicated group's rules: heartbeats and lease, elections
                   (election.py), transfer master (transfer.py), the commit point
    active_passive the active-passive cluster's: promotion by a cluster manager, catch-up,
                   ready backups, a recovering primary

Every heartbeat interval the mode ticks; every message from a peer is dispatched here:
the replication stream's to its two sides, the rest to the mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar

from broker_ref.active_passive import ActivePassive
from broker_ref.config import NodeConfig
from broker_ref.contact import Contact
from broker_ref.feeds import Feeds
from broker_ref.follower import Follower
from broker_ref.frame_log import FrameLog
from broker_ref.group_core import GroupCore, StoreSide
from broker_ref.oplog import OperationalLog
from broker_ref.peer_network import PeerNetwork
from broker_ref.roles import Role
from broker_ref.self_elected import SelfElected

__all__ = ["Group", "Mode", "StoreSide"]

T = TypeVar("T")


class Mode(Protocol):
    """How a group's nodes come to have a master: they elect one (self_elected.py), or a
    cluster manager promotes one (active_passive.py). Group thread only."""

    def started(self, now: float) -> None: ...

    def full_copy(self, peer: str) -> bool:
        """Whether `peer`, asking to sync, gets a full copy whatever it holds."""
        ...

    def tick(self, now: float) -> None:
        """Every heartbeat: tell the peers this node's state, and act on the time passed."""
        ...

    def on_stall(self, gap_s: float, now: float) -> None: ...

    def on_peer_left(self, peer: str) -> None: ...

    def on_status(self, peer: str, msg: dict[str, Any], term: int, now: float) -> None: ...

    def on_message(self, peer: str, kind: object, msg: dict[str, Any], now: float) -> None:
        """A message the replication stream does not handle."""
        ...

    def acks_needed(self) -> int:
        """Replica acknowledgements a commit waits for, now."""
        ...

    def advance_commit(self) -> None:
        """Post the commit point the acknowledgements so far allow."""
        ...


class Group:
    def __init__(
        self,
        config: NodeConfig,
        oplog: OperationalLog,
        frames: FrameLog,
        store_side: StoreSide,
        replication_socket: socket.socket | None = None,
    ) -> None:
        self._socket = replication_socket
        self.config = config
        self._loop: asyncio.AbstractEventLoop | None = None
        self._net = PeerNetwork(config, oplog, self._on_message)
        self.core = GroupCore(config, oplog, frames, store_side, self._net, self.call)
        # A peer is out of contact after an election timeout in a replicated group, after
        # twice the link heartbeat in an active-passive cluster.
        timeout = (
            2 * config.link_heartbeat_interval_s
            if config.active_passive
            else config.election_timeout_s
        )
        self.contact = Contact(config.peer_names, timeout, oplog, time.monotonic())
        self.feeds = Feeds(self.core)
        self.follower = Follower(self.core)
        self.on_fatal: Callable[[str], None] = lambda why: None
        fatal = self._fatal
        self.mode: Mode
        if config.active_passive:
            self.mode = ActivePassive(self.core, self.contact, self.feeds, self.follower, fatal)
            self.feeds.synced = self.mode.on_sync
            self.follower.wants_full_copy = lambda: not self._streamed
            self.follower.on_stream_start = self._first_stream(self.follower.on_stream_start)
        else:
            self.mode = SelfElected(self.core, self.contact, self.feeds, self.follower, fatal)
        self._streamed = False  # this node has followed a master since it started
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._stop: asyncio.Event | None = None

    # ---- thread life --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the group thread; raise OSError if the replication port cannot be taken."""
        self._thread = threading.Thread(target=self._run, name="group", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._startup_error is not None:
            raise self._startup_error

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = None
        if self._socket is not None:
            try:
                server = await asyncio.start_server(self._net.serve, sock=self._socket)
            except OSError as exc:
                self._startup_error = exc
                self._ready.set()
                return
        self._net.on_connected = self.feeds.on_connected
        await self._net.start(server)
        self._ready.set()
        self.mode.started(time.monotonic())
        feeder = asyncio.create_task(self.feeds.run())
        try:
            while not self._stop.is_set():
                self._tick()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.config.heartbeat_interval_s)
        finally:
            feeder.cancel()
            self._net.stop()
            await asyncio.sleep(0.05)  # let the connection tasks end on their own

    def _fatal(self, why: str) -> None:
        self.on_fatal(why)

    def _first_stream(self, then: Callable[[str], None]) -> Callable[[str], None]:
        """A broker clears its store for a full copy only the first time it follows a
        primary after it started; a backup that fails over catches up from what it has."""

        def started(master: str) -> None:
            self._streamed = True
            then(master)

        return started

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def call(self, action: Callable[[], object]) -> None:
        """Run `action` in the group thread (from the reactor or the management thread)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(action)

    def call_and_wait(self, action: Callable[[], object], timeout_s: float = 5.0) -> bool:
        """Run `action` in the group thread and wait until it has run (not from that thread).

        The management API answers a change only once it is applied, as Broker-J's does,
        so a read right after a write sees the new value. False if the group thread is not
        running or did not get to the action within `timeout_s`.
        """
        loop = self._loop
        if loop is None:
            return False
        done = threading.Event()

        def run() -> None:
            try:
                action()
            finally:
                done.set()

        loop.call_soon_threadsafe(run)
        return done.wait(timeout_s)

    def ask(self, action: Callable[[], T], timeout_s: float = 5.0) -> T:
        """Run `action` in the group thread and wait for its result, or its exception (not
        from that thread). TimeoutError when the thread did not get to it in time."""
        loop = self._loop
        if loop is None:
            raise TimeoutError("the group thread is not running")
        answer: Future[T] = Future()

        def run() -> None:
            try:
                answer.set_result(action())
            except BaseException as exc:
                answer.set_exception(exc)

        loop.call_soon_threadsafe(run)
        return answer.result(timeout_s)

    # ---- facts --------------------------------------------------------------------------------

    @property
    def term(self) -> int:
        return self.core.term

    def acks_needed(self) -> int:
        """Replica acknowledgements a commit waits for, now (read by the reactor)."""
        return self.mode.acks_needed()

    def peer_view(self) -> list[dict[str, Any]]:
        """The other nodes as this node sees them (for the management API)."""
        now = time.monotonic()
        view = []
        for peer, address in self.config.peers:
            if not self.core.counts(peer):
                continue  # not in the group (yet, or any more)
            info = self.contact.info.get(peer, {})
            reachable = self.contact.alive(peer, now)
            view.append(
                {
                    "name": peer,
                    "address": address,
                    "role": info.get("role", "UNREACHABLE") if reachable else "UNREACHABLE",
                    "lastKnownReplicationTransactionId": info.get("last_txid", 0),
                    "term": info.get("term", 0),
                }
            )
        return view

    # ---- the heartbeat ------------------------------------------------------------------------

    def _stalled(self, now: float) -> bool:
        """Whether this node's own thread stood still (a full-GC-like stall) since last time.

        A stalled node drops what its peers sent meanwhile and rejoins from scratch: its
        master gave up on its stream while it stood still.
        """
        gap = self.contact.stall(now)
        if gap is None:
            return False
        self._net.drop_incoming()
        self.follower.forget()
        self.core.master = None
        self.mode.on_stall(gap, now)
        return True

    def _tick(self) -> None:
        now = time.monotonic()
        self._stalled(now)
        for peer in self.contact.update(now):
            if self.core.role is Role.MASTER:
                self.feeds.give_up(peer)
            self.mode.on_peer_left(peer)
        self.mode.tick(now)

    def records_committed(self) -> None:
        """Called (in the group thread) when the master's reactor committed new records."""
        self.mode.advance_commit()
        self.feeds.wake()

    # ---- messages -----------------------------------------------------------------------------

    def _on_message(self, peer: str, msg: dict[str, Any], payload: bytes) -> None:
        now = time.monotonic()
        if self._stalled(now) or peer in self.core.membership.removed:
            return  # a removed node's name takes no part in the group again
        self.contact.heard(peer, now)
        kind = msg.get("type")
        term = int(msg.get("term", 0))
        core = self.core
        if kind == "status":
            self.contact.info[peer] = msg
            self.mode.on_status(peer, msg, term, now)
        elif kind == "sync_request":
            if core.role is Role.MASTER and term == core.term:
                away = self.contact.away(peer, now)
                full = bool(msg.get("full")) or self.mode.full_copy(peer)
                self.feeds.on_sync_request(peer, term, away, full)
        elif kind == "sync_reply":
            self.follower.on_sync_reply(peer, msg, term)
        elif kind == "stream_from":
            self.feeds.on_stream_from(peer, msg, term)
        elif kind == "append":
            self.follower.on_append(peer, msg, term, payload, now)
        elif kind == "ack":
            if self.feeds.on_ack(peer, msg, term):
                self.mode.advance_commit()
        else:
            self.mode.on_message(peer, kind, msg, now)
