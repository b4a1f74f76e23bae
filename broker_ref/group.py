"""A node's membership of its replicated group: roles, elections, the replication stream.

Runs in its own thread with its own event loop. It decides; the reactor thread
acts (through `StoreSide`, whose calls are posted to the reactor): store and
apply records, roll back, serve or stop serving clients.

    every heartbeat   each node tells every peer its term, role, master and last txid;
                      a master that hears from too few peers for `election_timeout`
                      steps down (HA-1009); a node with no live master stands for
                      election if the election rules let it
    election          term + 1, vote for itself, ask the others (election.py)
    joining a master  sync_request → sync_reply (the master's term boundaries): the node
                      discards what the master never had (HA-1014), or everything
                      when it was away longer than the retention (network restore), then
                      stream_from → append … ← ack
    commit            the master's reactor commits locally, then waits for the acks
                      the durability policy asks for (`acked_through`)
    transfer master   the five steps of the seed (`_transfer`)
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from broker_ref.config import NodeConfig
from broker_ref.durability import AckPolicy
from broker_ref.election import Ballot, Election, SelfElection, Voter, majority
from broker_ref.frame_log import FrameLog, term_in
from broker_ref.group_state import TermRecord, load_term, save_term
from broker_ref.oplog import Code, OperationalLog
from broker_ref.peer_network import PeerNetwork
from broker_ref.roles import Role

__all__ = ["Group", "GroupSettings", "StoreSide"]

BATCH_BYTES = 256 * 1024
TRANSFER_WAIT_S = 5.0
SYNC_RETRY_S = 1.0
# A node whose own loop stood still this many election timeouts counts as stalled (a
# full GC, SIGSTOP); shorter hiccups (a busy machine) do not.
STALL_FACTOR = 3.0


class StoreSide(Protocol):
    """What the group asks of the reactor thread; every call only posts work there."""

    def become_master(self, term: int) -> None: ...

    def become_follower(self, role: Role, reason: str) -> None: ...

    def apply(self, frames: list[bytes], done: Callable[[int], None]) -> None: ...

    def rollback(
        self, keep_through: int, restore: bool, master: str, done: Callable[[], None]
    ) -> None: ...

    def acked_through(self, txid: int) -> None: ...

    def suspend(self, done: Callable[[int], None]) -> None:
        """Stop taking work; `done(last txid)` once nothing more will be committed."""
        ...

    def abort_suspended(self) -> None: ...


@dataclass
class GroupSettings:
    """The attributes an operator may change at run time (effective immediately)."""

    priority: int
    designated_primary: bool
    quorum_override: int


@dataclass
class _Feed:
    """The master's view of one replica's stream."""

    next: int | None = None  # next txid to send; None until the replica asks
    acked: int = 0


def split_frames(payload: bytes) -> list[bytes]:
    frames = []
    offset = 0
    while offset < len(payload):
        length = int.from_bytes(payload[offset : offset + 4], "big")
        end = offset + 8 + length
        frames.append(payload[offset:end])
        offset = end
    return frames


class Group:
    def __init__(
        self,
        config: NodeConfig,
        oplog: OperationalLog,
        frames: FrameLog,
        store_side: StoreSide,
        election: Election | None = None,
        replication_socket: socket.socket | None = None,
    ) -> None:
        self._socket = replication_socket
        self._rng = random.Random()
        names = sorted((config.name, *config.peer_names))
        self._rank = names.index(config.name)
        self.config = config
        self._oplog = oplog
        self._frames = frames
        self._store = store_side
        self._election: Election = election or SelfElection()
        self.settings = GroupSettings(
            config.priority, config.designated_primary, config.quorum_override
        )
        saved = load_term(config.data_dir)
        self.term = saved.term
        self.voted_for = saved.voted_for
        self.role = Role.WAITING
        self.master: str | None = None
        self._started = time.monotonic()
        self._last_alive = self._started
        self._master_seen = 0.0
        self._peer_seen: dict[str, float] = {}
        self._peer_info: dict[str, dict[str, Any]] = {}
        self._in_contact: set[str] = set()
        self._absent_since: dict[str, float] = {}
        self._away_for: dict[str, float] = {}
        self._votes: set[str] = set()
        self._standing_term = 0
        self._prevotes: set[str] = set()
        self._prevote_term = 0
        self._election_due = self._next_election_time(time.monotonic())
        self._feeds: dict[str, _Feed] = {}
        self._acked_posted = 0
        self._synced: tuple[str, int] | None = None  # (master, term) this replica streams from
        self._synced_at = 0.0
        self._joined = False  # met a peer at least once since start
        self.on_fatal: Callable[[str], None] = lambda why: None
        self._refusing: str | None = None
        self._refuse_at = 0.0
        self._sync_asked = 0.0
        self._expected_next = 0
        self._transfer_to: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._feed_wake: asyncio.Event | None = None
        self._net = PeerNetwork(config, oplog, self._on_message)
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
        self._feed_wake = asyncio.Event()
        self._stop = asyncio.Event()
        server = None
        if self._socket is not None:
            try:
                server = await asyncio.start_server(self._net.serve, sock=self._socket)
            except OSError as exc:
                self._startup_error = exc
                self._ready.set()
                return
        self._net.on_connected = self._on_connected
        await self._net.start(server)
        self._ready.set()
        if self.size == 1:
            self._maybe_stand(time.monotonic())  # a group of one needs no one's vote
        feeder = asyncio.create_task(self._feed_loop())
        try:
            while not self._stop.is_set():
                self._tick()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.config.heartbeat_interval_s)
        finally:
            feeder.cancel()
            self._net.stop()
            await asyncio.sleep(0.05)  # let the connection tasks end on their own

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

    # ---- facts ------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self.config.group_size

    def _voter(self, now: float) -> Voter:
        return Voter(
            name=self.config.name,
            last_txid=self._frames.last_txid,
            last_term=self._frames.last_term(),
            priority=self.settings.priority,
            group_size=self.size,
            quorum_override=self.settings.quorum_override,
            designated_primary=self.settings.designated_primary,
            master_recently_seen=(
                self.master is not None
                and self.master != self.config.name
                and now - self._master_seen < self.config.election_timeout_s
            ),
        )

    def _next_election_time(self, now: float, soon: bool = False) -> float:
        """When to stand next if no master appears. Nodes are staggered by name as well as by
        chance, so that two of them rarely stand at once and split the vote (a round trip
        between nodes can be as long as the random part)."""
        speed = {3: 0.6, 2: 0.8}.get(self.settings.priority, 1.0)
        base = self.config.election_timeout_s * speed
        stagger = 0.5 * self._rank
        if soon:
            return now + base * 0.5 * (stagger + self._rng.random())
        return now + base * (1.0 + stagger + 0.5 * self._rng.random())

    def acks_needed(self) -> int:
        """Replica acknowledgements a commit waits for, now."""
        policy = self.config.durability.ack_policy
        if policy is AckPolicy.NONE or self.size == 1:
            return 0
        if self.settings.designated_primary and self.size == 2 and not self._in_contact:
            return 0  # operating solo
        if policy is AckPolicy.ALL:
            return self.size - 1
        needed = self.settings.quorum_override or majority(self.size)
        return max(0, needed - 1)

    def peer_view(self) -> list[dict[str, Any]]:
        """The other nodes as this node sees them (for the management API)."""
        now = time.monotonic()
        view = []
        for peer, address in self.config.peers:
            info = self._peer_info.get(peer, {})
            seen = self._peer_seen.get(peer)
            reachable = seen is not None and now - seen < self.config.election_timeout_s
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

    # ---- the heartbeat --------------------------------------------------------------------------

    def _stalled(self, now: float) -> bool:
        """Whether this node's own thread stood still (a full-GC-like stall) since last time.

        A stalled node drops what its peers sent meanwhile and rejoins from scratch: its
        master gave up on its stream while it stood still (see `_update_contact`).
        """
        gap = now - self._last_alive
        self._last_alive = now
        if gap <= STALL_FACTOR * self.config.election_timeout_s:
            return False
        self._net.drop_incoming()
        self._synced = None
        self.master = None
        self._peer_seen.clear()
        if self.role is Role.MASTER:
            self._step_down(Role.WAITING, f"stalled for {gap:.1f} s")
        else:
            self._set_role(Role.WAITING, f"stalled for {gap:.1f} s")
        self._election_due = self._next_election_time(now)
        return True

    def _tick(self) -> None:
        now = time.monotonic()
        self._stalled(now)
        self._update_contact(now)
        status = {
            "type": "status",
            "term": self.term,
            "role": self.role.value,
            "master": self.master,
            "last_txid": self._frames.last_txid,
            "last_term": self._frames.last_term(),
            "streams": [p for p, f in self._feeds.items() if f.next is not None],
            "designated": self.settings.designated_primary,
        }
        for peer in self.config.peer_names:
            self._net.send(peer, status)
        if self._refusing is not None:
            if now >= self._refuse_at:
                self.on_fatal(self._refusing)
            return
        if self.role is Role.MASTER:
            if not self._has_lease():
                self._oplog.warn(Code.INSUFFICIENT_REPLICAS, "Insufficient replicas contactable")
                self._step_down(Role.WAITING, "insufficient replicas contactable")
            else:
                self._advance_commit()
            return
        if self._synced is not None and self.master is not None:
            if now - self._master_seen > self.config.election_timeout_s:
                self._synced = None
                self.master = None
                self._set_role(Role.WAITING, "the master is out of contact")
                self._election_due = self._next_election_time(now, soon=True)
        elif self.master is not None and now - self._sync_asked > SYNC_RETRY_S:
            self._ask_sync(self.master)
        if now >= self._election_due:
            self._election_due = self._next_election_time(now)
            self._maybe_stand(now)

    def _update_contact(self, now: float) -> None:
        timeout = self.config.election_timeout_s
        for peer in self.config.peer_names:
            seen = self._peer_seen.get(peer)
            alive = seen is not None and now - seen < timeout
            if alive and peer not in self._in_contact:
                self._in_contact.add(peer)
                since = self._absent_since.pop(peer, None)
                # How long it was away decides, when it asks to sync, catch-up or full copy.
                self._away_for[peer] = 0.0 if since is None else now - since
                self._oplog.info(Code.NODE_JOINED, f"Joined : Node : '{peer}'")
            elif not alive and peer in self._in_contact:
                self._in_contact.discard(peer)
                self._absent_since[peer] = seen if seen is not None else now
                self._oplog.info(Code.NODE_LEFT, f"Left : Node : '{peer}'")
                if self.role is Role.MASTER:
                    # Give up the stream: what it still holds for the peer is dropped, and
                    # the peer must sync again when it is back (je.rep feeder timeout).
                    self._net.reset(peer)
                    self._feeds[peer] = _Feed()

    def _has_lease(self) -> bool:
        needed = self._election.votes_needed(self._voter(time.monotonic()))
        return 1 + len(self._in_contact) >= needed

    # ---- elections -----------------------------------------------------------------------------

    def _set_term(self, term: int, voted_for: str | None) -> None:
        save_term(self.config.data_dir, TermRecord(term, voted_for))
        self.term = term
        self.voted_for = voted_for

    def _maybe_stand(self, now: float, transfer: bool = False) -> None:
        """Stand for election; unless asked by a transfer, first ask the others whether they
        would vote (a pre-vote), so that a node rejoining after an absence does not depose
        a working master by raising the term."""
        me = self._voter(now)
        if not transfer and (me.master_recently_seen or not self._election.may_stand(me)):
            return
        if transfer:
            self._stand(me, transfer=True)
            return
        self._prevote_term = self.term + 1
        self._prevotes = {self.config.name}
        ballot = {
            "type": "pre_vote",
            "term": self._prevote_term,
            "last_txid": me.last_txid,
            "last_term": me.last_term,
            "priority": me.priority,
        }
        for peer in self.config.peer_names:
            self._net.send(peer, ballot)
        self._count_prevotes()

    def _on_pre_vote(self, peer: str, msg: dict[str, Any]) -> None:
        """Would this node vote for `peer` in the term it proposes? Changes nothing here."""
        term = int(msg["term"])
        ballot = Ballot(
            candidate=peer,
            term=term,
            last_txid=int(msg["last_txid"]),
            last_term=int(msg["last_term"]),
            priority=int(msg["priority"]),
        )
        now = time.monotonic()
        granted = (
            term > self.term
            and not (self.role is Role.MASTER and self._has_lease())
            and self._election.grants(self._voter(now), ballot)
        )
        if granted:  # give that candidate time to win before standing ourselves
            self._election_due = max(self._election_due, self._next_election_time(now))
        self._net.send(peer, {"type": "pre_vote_reply", "term": term, "granted": granted})

    def _on_pre_vote_reply(self, peer: str, msg: dict[str, Any]) -> None:
        if int(msg["term"]) == self._prevote_term and msg.get("granted"):
            self._prevotes.add(peer)
            self._count_prevotes()

    def _count_prevotes(self) -> None:
        if self._prevote_term != self.term + 1 or self.role is Role.MASTER:
            return
        me = self._voter(time.monotonic())
        if len(self._prevotes) >= self._election.votes_needed(me):
            self._prevote_term = 0
            self._stand(me, transfer=False)

    def _stand(self, me: Voter, transfer: bool) -> None:
        self._set_term(self.term + 1, self.config.name)
        self._oplog.info(
            Code.ELECTION,
            f"Election : standing in term {self.term} with transaction {me.last_txid}"
            f" (term {me.last_term}){' for a master transfer' if transfer else ''}",
        )
        self._standing_term = self.term
        self._votes = {self.config.name}
        if self.role is not Role.WAITING:
            self._set_role(Role.WAITING, "standing for election")
        self.master = None
        self._synced = None
        ballot = {
            "type": "vote_request",
            "term": self.term,
            "last_txid": me.last_txid,
            "last_term": me.last_term,
            "priority": me.priority,
            "transfer": transfer,
        }
        for peer in self.config.peer_names:
            self._net.send(peer, ballot)
        self._count_votes()

    def _count_votes(self) -> None:
        if self._standing_term != self.term or self.role is Role.MASTER:
            return
        needed = self._election.votes_needed(self._voter(time.monotonic()))
        if len(self._votes) >= needed:
            self._win()

    def _win(self) -> None:
        self.master = self.config.name
        self._feeds = {peer: _Feed() for peer in self.config.peer_names}
        self._acked_posted = self._frames.last_txid
        self._transfer_to = None
        self.role = Role.MASTER
        self._store.become_master(self.term)
        status = {
            "type": "status",
            "term": self.term,
            "role": "MASTER",
            "master": self.config.name,
            "last_txid": self._frames.last_txid,
            "last_term": self._frames.last_term(),
        }
        for peer in self.config.peer_names:
            self._net.send(peer, status)

    def _on_vote_request(self, peer: str, msg: dict[str, Any]) -> None:
        term = int(msg["term"])
        if term > self.term:
            self._adopt_term(term)
        granted = False
        if term == self.term and self.voted_for in (None, peer) and self.role is not Role.MASTER:
            ballot = Ballot(
                candidate=peer,
                term=term,
                last_txid=int(msg["last_txid"]),
                last_term=int(msg["last_term"]),
                priority=int(msg["priority"]),
                transfer=bool(msg.get("transfer")),
            )
            granted = self._election.grants(self._voter(time.monotonic()), ballot)
            if granted:
                self._set_term(self.term, peer)
                self._election_due = self._next_election_time(time.monotonic())
        self._net.send(peer, {"type": "vote", "term": self.term, "granted": granted})

    def _on_vote(self, peer: str, msg: dict[str, Any]) -> None:
        term = int(msg["term"])
        if term > self.term:
            self._adopt_term(term)
            return
        if term == self.term and msg.get("granted"):
            self._votes.add(peer)
            self._count_votes()

    def _adopt_term(self, term: int) -> None:
        """A newer term exists: forget the old vote; a master of an older term steps down."""
        self._set_term(term, None)
        if self.role is Role.MASTER:
            self._step_down(Role.WAITING, f"a newer term {term} exists")
        self._synced = None

    # ---- roles ---------------------------------------------------------------------------------

    def _set_role(self, role: Role, reason: str) -> None:
        if role is self.role:
            return
        self.role = role
        self._store.become_follower(role, reason)

    def _step_down(self, role: Role, reason: str) -> None:
        self.master = None
        self._feeds = {}
        self._transfer_to = None
        self._election_due = self._next_election_time(time.monotonic())
        self._set_role(role, reason)

    # ---- messages ------------------------------------------------------------------------------

    def _on_connected(self, peer: str) -> None:
        feed = self._feeds.get(peer)
        if feed is not None and feed.next is not None:
            feed.next = feed.acked + 1  # resend what the broken link may have lost
            self._wake()

    def _on_message(self, peer: str, msg: dict[str, Any], payload: bytes) -> None:
        now = time.monotonic()
        if self._stalled(now):
            return
        self._peer_seen[peer] = now
        kind = msg.get("type")
        term = int(msg.get("term", 0))
        if kind == "status":
            self._peer_info[peer] = msg
            self._on_status(peer, msg, term, now)
        elif kind == "pre_vote":
            self._on_pre_vote(peer, msg)
        elif kind == "pre_vote_reply":
            self._on_pre_vote_reply(peer, msg)
        elif kind == "vote_request":
            self._on_vote_request(peer, msg)
        elif kind == "vote":
            self._on_vote(peer, msg)
        elif kind == "sync_request":
            self._on_sync_request(peer, msg, term, now)
        elif kind == "sync_reply":
            self._on_sync_reply(peer, msg, term)
        elif kind == "stream_from":
            self._on_stream_from(peer, msg, term)
        elif kind == "append":
            self._on_append(peer, msg, term, payload, now)
        elif kind == "ack":
            self._on_ack(peer, msg, term)
        elif kind == "transfer_request":
            self._on_transfer_request(peer, msg)
        elif kind == "transfer_go" and term == self.term and self.master in (peer, None):
            self._maybe_stand(now, transfer=True)

    def _on_status(self, peer: str, msg: dict[str, Any], term: int, now: float) -> None:
        if (
            not self._joined
            and self.size == 2
            and self.settings.designated_primary
            and msg.get("designated")
        ):
            if self._refusing is None:
                # Keep telling the peer for a moment, so that it refuses too; then stop.
                self._refusing = (
                    f"both nodes of the group are designated primary ('{self.config.name}' and "
                    f"'{peer}'): refusing to start, as the seeds say"
                )
                self._refuse_at = now + 3 * self.config.election_timeout_s
            return
        self._joined = True
        if term > self.term:
            self._adopt_term(term)
        if msg.get("role") != "MASTER" or term < self.term:
            return
        if self.role is Role.MASTER:
            return  # the same term cannot have two winners; the other side adopts a newer term
        self._master_seen = now
        if self.master != peer:
            self.master = peer
            self._synced = None
            self._ask_sync(peer)
        elif (
            self._synced == (peer, term)
            and self.config.name not in msg.get("streams", ())
            and now - self._synced_at > SYNC_RETRY_S
        ):
            self._synced = None  # the master gave up our stream: join it again
            self._ask_sync(peer)

    def _ask_sync(self, master: str) -> None:
        self._sync_asked = time.monotonic()
        self._net.send(
            master,
            {"type": "sync_request", "term": self.term, "last_txid": self._frames.last_txid},
        )

    def _on_sync_request(self, peer: str, msg: dict[str, Any], term: int, now: float) -> None:
        if self.role is not Role.MASTER or term != self.term:
            return
        absent = self._absent_since.get(peer)
        away = self._away_for.pop(peer, 0.0) if absent is None else now - absent
        restore = away > self.config.rep_stream_timeout_s
        if restore:
            self._oplog.info(
                Code.NETWORK_RESTORE,
                f"Network restore : node '{peer}' was away {away:.1f} s, longer than "
                f"the retention of {self.config.rep_stream_timeout_s:g} s : sending a full copy",
            )
        self._feeds[peer] = _Feed()
        self._net.send(
            peer,
            {
                "type": "sync_reply",
                "term": self.term,
                "boundaries": self._frames.boundaries(),
                "last_txid": self._frames.last_txid,
                "restore": restore,
            },
        )

    def _on_sync_reply(self, peer: str, msg: dict[str, Any], term: int) -> None:
        if peer != self.master or term != self.term or self._synced is not None:
            return
        boundaries = [(int(t), int(f)) for t, f in msg["boundaries"]]
        master_last = int(msg["last_txid"])
        restore = bool(msg.get("restore"))
        keep = 0 if restore else self._common_prefix(boundaries, master_last)
        self._synced = (peer, term)
        self._synced_at = time.monotonic()

        def rolled_back() -> None:
            self.call(lambda: self._start_stream(peer, term, keep))

        if restore or keep < self._frames.last_txid:
            self._store.rollback(keep, restore, peer, rolled_back)
        else:
            self._start_stream(peer, term, keep)

    def _common_prefix(self, boundaries: list[tuple[int, int]], master_last: int) -> int:
        """The last txid this node shares with the master's history."""
        mine = self._frames.last_txid
        txid = min(mine, master_last)
        while txid > 0:
            if self._frames.term_at(txid) == term_in(boundaries, master_last, txid):
                return txid
            txid -= 1
        return 0

    def _start_stream(self, master: str, term: int, keep: int) -> None:
        if self._synced != (master, term) or self.term != term:
            return
        self._expected_next = keep + 1
        self._set_role(Role.REPLICA, f"replicating from {master}")
        self._net.send(master, {"type": "stream_from", "term": term, "from": keep + 1})

    def _on_stream_from(self, peer: str, msg: dict[str, Any], term: int) -> None:
        if self.role is not Role.MASTER or term != self.term:
            return
        feed = self._feeds.setdefault(peer, _Feed())
        first = int(msg["from"])
        feed.next = first
        feed.acked = max(0, first - 1)
        self._wake()

    def _on_append(
        self, peer: str, msg: dict[str, Any], term: int, payload: bytes, now: float
    ) -> None:
        if peer != self.master or term != self.term or self._synced != (peer, term):
            return
        self._master_seen = now
        first = int(msg["first"])
        frames = split_frames(payload)
        if first > self._expected_next:
            self._net.send(peer, {"type": "stream_from", "term": term, "from": self._expected_next})
            return
        skip = self._expected_next - first
        frames = frames[skip:]
        if not frames:
            return
        self._expected_next += len(frames)

        def applied(txid: int) -> None:
            self.call(lambda: self._net.send(peer, {"type": "ack", "term": term, "txid": txid}))

        self._store.apply(frames, applied)

    def _on_ack(self, peer: str, msg: dict[str, Any], term: int) -> None:
        feed = self._feeds.get(peer)
        if self.role is not Role.MASTER or term != self.term or feed is None:
            return
        feed.acked = max(feed.acked, int(msg["txid"]))
        self._advance_commit()
        if self._transfer_to == peer:
            self._wake()

    # ---- the master's side of the stream --------------------------------------------------------

    def records_committed(self) -> None:
        """Called (in the group thread) when the master's reactor committed new records."""
        self._advance_commit()
        self._wake()

    def _wake(self) -> None:
        if self._feed_wake is not None:
            self._feed_wake.set()

    def _advance_commit(self) -> None:
        if self.role is not Role.MASTER:
            return
        needed = self.acks_needed()
        last = self._frames.last_txid
        if needed == 0:
            through = last
        else:
            acks = sorted(
                (f.acked for p, f in self._feeds.items() if f.next is not None), reverse=True
            )
            if len(acks) < needed:
                return
            through = min(acks[needed - 1], last)
        if through > self._acked_posted:
            self._acked_posted = through
            self._store.acked_through(through)

    async def _feed_loop(self) -> None:
        assert self._feed_wake is not None
        while True:
            self._feed_wake.clear()
            sent = False
            if self.role is Role.MASTER:
                last = self._frames.last_txid
                for peer, feed in list(self._feeds.items()):
                    if feed.next is None or feed.next > last:
                        continue
                    frames = self._frames.frames(feed.next, BATCH_BYTES)
                    header = {
                        "type": "append",
                        "term": self.term,
                        "first": feed.next,
                        "count": len(frames),
                    }
                    if self._net.send(peer, header, b"".join(frames)):
                        feed.next += len(frames)
                        sent = True
                        await self._net.drain(peer)
            if not sent:
                await self._feed_wake.wait()
            else:
                await asyncio.sleep(0)

    # ---- operator actions (from the management thread) ----------------------------------------

    def request_transfer(self) -> str | None:
        """Make this node the master; None when asked, else why it cannot be asked."""
        if self.role is Role.MASTER:
            return None
        master = self.master
        if master is None or master == self.config.name:
            return "there is no master to transfer from"
        self.call(lambda: self._net.send(master, {"type": "transfer_request", "term": self.term}))
        return None

    def _on_transfer_request(self, peer: str, msg: dict[str, Any]) -> None:
        if self.role is not Role.MASTER or self._transfer_to is not None:
            return
        self._transfer_to = peer
        address = dict(self.config.peers).get(peer, "?")
        self._oplog.info(
            Code.TRANSFER_MASTER, f"Master transfer requested : to '{peer}' ({address})"
        )
        asyncio.get_running_loop().create_task(self._transfer(peer))

    async def _transfer(self, peer: str) -> None:
        """The seed's five steps, from the old master's side."""
        term = self.term
        feed = self._feeds.get(peer)

        async def caught_up(through: Callable[[], int]) -> bool:
            deadline = time.monotonic() + TRANSFER_WAIT_S
            while time.monotonic() < deadline:
                if self.role is not Role.MASTER or self.term != term or feed is None:
                    return False
                if feed.acked >= through():
                    return True
                await asyncio.sleep(0.01)
            return False

        # 1. give the chosen node time to become reasonably up to date
        if not await caught_up(lambda: self._frames.last_txid - 100):
            self._transfer_to = None
            return
        # 2. suspend transactions; let the chosen node become fully up to date: with
        #    everything committed up to the moment the suspension took hold
        loop = asyncio.get_running_loop()
        suspended: asyncio.Future[int] = loop.create_future()

        def on_suspended(last: int) -> None:
            loop.call_soon_threadsafe(suspended.set_result, last)

        self._store.suspend(on_suspended)
        last = await suspended
        self._wake()
        if not await caught_up(lambda: last):
            self._transfer_to = None
            self._store.become_master(self.term)  # resume serving
            return
        # 3. abort the suspended transactions, disconnect the clients
        self._store.abort_suspended()
        # 4. the chosen node becomes master; this one a replica of it
        self._net.send(peer, {"type": "transfer_go", "term": term})
        self._step_down(Role.REPLICA, f"mastership transferred to {peer}")
        self._master_seen = 0.0
        # 5. clients reconnect to the new master through their failover lists

    def set_attributes(self, changes: dict[str, Any]) -> None:
        """Apply validated attribute changes (called in the group thread)."""
        if "priority" in changes:
            self.settings.priority = int(changes["priority"])
            self._oplog.info(Code.PRIORITY, f"Priority : {self.settings.priority}")
        if "quorumOverride" in changes:
            self.settings.quorum_override = int(changes["quorumOverride"])
            size = self.settings.quorum_override or majority(self.size)
            self._oplog.info(Code.MINIMUM_GROUP_SIZE, f"Minimum group size : {size}")
        if "designatedPrimary" in changes:
            self.settings.designated_primary = bool(changes["designatedPrimary"])
            flag = "true" if self.settings.designated_primary else "false"
            self._oplog.info(Code.DESIGNATED_PRIMARY, f"Designated primary : {flag}")
        if self.role is not Role.MASTER:
            self._election_due = min(self._election_due, time.monotonic())
        self._advance_commit()
