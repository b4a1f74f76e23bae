"""The replica's side of the replication stream.

A node that found its master asks to sync (`sync_request` with its last txid); the reply
carries the master's term boundaries: the node discards what the master never had
(HA-1014), or everything when it gets a full copy (network restore), and asks for the
stream from there (`stream_from`). Each `append` is stored and applied by the reactor,
then acknowledged (`ack`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from broker_ref.feeds import split_frames
from broker_ref.frame_log import term_in
from broker_ref.group_core import GroupCore
from broker_ref.roles import Role

__all__ = ["SYNC_RETRY_S", "Follower"]

SYNC_RETRY_S = 1.0


class Follower:
    """Group thread only."""

    def __init__(self, core: GroupCore) -> None:
        self._core = core
        self.synced: tuple[str, int] | None = None  # (master, term) this node streams from
        self.synced_at = 0.0
        self.sync_asked = 0.0
        # The next txid the stream brings; None while no stream of this sync runs (asked,
        # or its rollback not done): what an earlier stream still sends is not applied then.
        self._expected_next: int | None = None
        # The role a node takes once its stream runs (REPLICA; a backup's `ready` comes later).
        self.streaming_role = Role.REPLICA
        # Called when the stream from `master` is about to start, after any rollback.
        self.on_stream_start: Callable[[str], None] = lambda master: None
        # Called (group thread) with the last txid held after each batch is applied.
        self.on_applied: Callable[[int], None] = lambda txid: None
        # Whether the next sync asks for a full copy (a broker that clears its store first).
        self.wants_full_copy: Callable[[], bool] = lambda: False
        self.master_last = 0  # the master's last txid when it answered the sync

    def forget(self) -> None:
        self.synced = None
        self._expected_next = None

    def following(self, peer: str, term: int) -> bool:
        return self.synced == (peer, term)

    def ask_sync(self, master: str) -> None:
        core = self._core
        self.sync_asked = time.monotonic()
        core.net.send(
            master,
            {
                "type": "sync_request",
                "term": core.term,
                "last_txid": core.frames.last_txid,
                "full": self.wants_full_copy(),
            },
        )

    def on_sync_reply(self, peer: str, msg: dict[str, Any], term: int) -> None:
        core = self._core
        if peer != core.master or term != core.term or self.synced is not None:
            return
        boundaries = [(int(t), int(f)) for t, f in msg["boundaries"]]
        master_last = int(msg["last_txid"])
        self.master_last = master_last
        restore = bool(msg.get("restore"))
        keep = 0 if restore else self._common_prefix(boundaries, master_last)
        self.synced = (peer, term)
        self._expected_next = None  # until the rollback is done and the stream asked for
        self.synced_at = time.monotonic()

        def rolled_back() -> None:
            core.call(lambda: self._start_stream(peer, term, keep))

        if restore or keep < core.frames.last_txid:
            core.store.rollback(keep, restore, peer, rolled_back)
        else:
            self._start_stream(peer, term, keep)

    def _common_prefix(self, boundaries: list[tuple[int, int]], master_last: int) -> int:
        """The last txid this node shares with the master's history."""
        frames = self._core.frames
        txid = min(frames.last_txid, master_last)
        while txid > 0:
            if frames.term_at(txid) == term_in(boundaries, master_last, txid):
                return txid
            txid -= 1
        return 0

    def _start_stream(self, master: str, term: int, keep: int) -> None:
        core = self._core
        if self.synced != (master, term) or core.term != term:
            return
        self._expected_next = keep + 1
        core.set_role(self.streaming_role, f"replicating from {master}")
        self.on_stream_start(master)
        core.net.send(master, {"type": "stream_from", "term": term, "from": keep + 1})

    def on_append(
        self, peer: str, msg: dict[str, Any], term: int, payload: bytes, now: float
    ) -> None:
        core = self._core
        if peer != core.master or term != core.term or self.synced != (peer, term):
            return
        core.master_seen = now
        if self._expected_next is None:
            return  # an earlier stream's, while this sync's rollback runs
        first = int(msg["first"])
        frames = split_frames(payload)
        if first > self._expected_next:
            core.net.send(peer, {"type": "stream_from", "term": term, "from": self._expected_next})
            return
        frames = frames[self._expected_next - first :]
        if not frames:
            return
        self._expected_next += len(frames)

        def applied(txid: int) -> None:
            def acknowledge() -> None:
                core.net.send(peer, {"type": "ack", "term": term, "txid": txid})
                self.on_applied(txid)

            core.call(acknowledge)

        core.store.apply(frames, applied)
