"""The master's side of the replication stream: one feed per replica.

    sync_request (a replica's last txid) → sync_reply (the master's term boundaries, and
    whether the replica gets a full copy) → stream_from (where it resumes) → append … ← ack

The feed loop sends each replica the frames it has not had, in batches; acknowledgements
move each feed's `acked`, from which the master's commit point follows (the mode decides
how many, or which, replicas a commit waits for).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker_ref.group_core import GroupCore
from broker_ref.oplog import Code
from broker_ref.records import KIND_DECLARE, KIND_SKIP, peek_frame, skip_frame
from broker_ref.roles import Role

__all__ = ["BATCH_BYTES", "Feed", "Feeds", "replication_filter", "split_frames"]

BATCH_BYTES = 256 * 1024


@dataclass
class Feed:
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


class Feeds:
    """Group thread only, but for `wake`, which the loop's own event makes safe there."""

    def __init__(self, core: GroupCore) -> None:
        self._core = core
        self.feeds: dict[str, Feed] = {}
        self.acked_posted = 0  # the commit point last posted to the reactor
        self._wake: asyncio.Event | None = None
        # Called with the peer whose acknowledgement arrived (transfer master waits on one).
        self.acked_by: Callable[[str], None] = lambda peer: None
        # Called with the peer this master answered a sync request of (its stream restarts).
        self.synced: Callable[[str], None] = lambda peer: None
        # What of each frame goes on the stream (an active-passive primary replaces what a
        # queue's replication level keeps back by a SKIP); None: every frame as it is.
        self.frame_filter: Callable[[bytes], bytes] | None = None

    def open_all(self) -> None:
        """A new master: a fresh feed for every peer, nothing acknowledged past its log."""
        self.feeds = {peer: Feed() for peer in self._core.peers}
        self.acked_posted = self._core.frames.last_txid

    def close_all(self) -> None:
        self.feeds = {}

    def give_up(self, peer: str) -> None:
        """Drop what is queued for `peer`: it must sync again (je.rep feeder timeout)."""
        self._core.net.reset(peer)
        self.feeds[peer] = Feed()

    def streaming(self) -> list[str]:
        """The peers whose stream is running."""
        return [p for p, f in self.feeds.items() if f.next is not None]

    def streaming_acks(self) -> dict[str, int]:
        """How far each peer whose stream is running has acknowledged."""
        return {p: f.acked for p, f in self.feeds.items() if f.next is not None}

    def post(self, through: int) -> None:
        """Tell the reactor the replicas the policy asks for hold everything to `through`."""
        if through > self.acked_posted:
            self.acked_posted = through
            self._core.store.acked_through(through)

    def wake(self) -> None:
        if self._wake is not None:
            self._wake.set()

    # ---- messages ------------------------------------------------------------------------------

    def on_connected(self, peer: str) -> None:
        feed = self.feeds.get(peer)
        if feed is not None and feed.next is not None:
            feed.next = feed.acked + 1  # resend what the broken link may have lost
            self.wake()

    def on_sync_request(self, peer: str, term: int, away_s: float, full_copy: bool) -> None:
        """Answer a replica that asks to join this master's stream; `full_copy` when it
        must discard what it holds (away past the retention, or the mode asks for it)."""
        core = self._core
        if core.role is not Role.MASTER or term != core.term:
            return
        retention = core.config.rep_stream_timeout_s
        restore = full_copy or away_s > retention
        if restore:
            why = (
                f"node '{peer}' was away {away_s:.1f} s, longer than the retention of "
                f"{retention:g} s"
                if away_s > retention
                else f"node '{peer}' resynchronises from this node"
            )
            core.oplog.info(Code.NETWORK_RESTORE, f"Network restore : {why} : sending a full copy")
        self.feeds[peer] = Feed()
        self.synced(peer)
        core.net.send(
            peer,
            {
                "type": "sync_reply",
                "term": core.term,
                "boundaries": core.frames.boundaries(),
                "last_txid": core.frames.last_txid,
                "restore": restore,
            },
        )

    def on_stream_from(self, peer: str, msg: dict[str, Any], term: int) -> None:
        core = self._core
        if core.role is not Role.MASTER or term != core.term:
            return
        feed = self.feeds.setdefault(peer, Feed())
        first = int(msg["from"])
        feed.next = first
        feed.acked = max(0, first - 1)
        self.wake()

    def on_ack(self, peer: str, msg: dict[str, Any], term: int) -> bool:
        """Record a replica's acknowledgement; True when it counted."""
        feed = self.feeds.get(peer)
        if self._core.role is not Role.MASTER or term != self._core.term or feed is None:
            return False
        feed.acked = max(feed.acked, int(msg["txid"]))
        self.acked_by(peer)
        return True

    # ---- the loop ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Send every replica what it has not had, as long as the group thread runs."""
        self._wake = wake = asyncio.Event()
        core = self._core
        while True:
            wake.clear()
            sent = False
            if core.role is Role.MASTER:
                last = core.frames.last_txid
                for peer, feed in list(self.feeds.items()):
                    if feed.next is None or feed.next > last:
                        continue
                    frames = core.frames.frames(feed.next, BATCH_BYTES)
                    if self.frame_filter is not None:
                        frames = [self.frame_filter(frame) for frame in frames]
                    header = {
                        "type": "append",
                        "term": core.term,
                        "first": feed.next,
                        "count": len(frames),
                    }
                    if core.net.send(peer, header, b"".join(frames)):
                        feed.next += len(frames)
                        sent = True
                        await core.net.drain(peer)
            if not sent:
                await wake.wait()
            else:
                await asyncio.sleep(0)


def replication_filter(
    level_of: Callable[[str], str | None], default: str
) -> Callable[[bytes], bytes]:
    """The frames a queue's replication level lets through: all of them for `all`, only its
    declarations for `configuration`, nothing for `none` (a SKIP holds each place).
    `level_of` gives a queue's own level, None for the broker's `default`."""

    def let_through(frame: bytes) -> bytes:
        kind, txid, term, queue = peek_frame(frame)
        if kind == KIND_SKIP:
            return frame
        level = level_of(queue) or default
        if level == "all" or (level == "configuration" and kind == KIND_DECLARE):
            return frame
        return skip_frame(txid, term)

    return let_through
