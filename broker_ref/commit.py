"""Group commit: the one place where staged changes become durable on this node.

The reactor stages each change (a record, and optionally whoever waits for it:
a producer's unsettled transfer) as it happens, and calls `commit` once at the
end of its batch of events. What `commit` does to the local log follows the
master sync policy: with coalescing-sync (the default) one write and one fsync
cover every change staged in the batch; otherwise SYNC fsyncs each commit,
WRITE_NO_SYNC writes it to the OS, NO_SYNC leaves it in the process to be
written later (`flush`). Committed records go to the frame log, from which the
group streams them to the replicas; the acknowledgements the durability policy
asks for are awaited by the caller (amqp_server), not here.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from broker_ref.durability import SyncPolicy
from broker_ref.frame_log import FrameLog
from broker_ref.log_store import LogStore
from broker_ref.records import Record, Skip, encode_frame

__all__ = ["GroupCommit"]

W = TypeVar("W")


class GroupCommit(Generic[W]):
    """Stages records with their waiters; `commit` makes them durable and hands them back."""

    def __init__(
        self,
        store: LogStore,
        coalescing: bool,
        frames: FrameLog | None = None,
        sync_policy: SyncPolicy = SyncPolicy.SYNC,
    ) -> None:
        self.store = store
        self.coalescing = coalescing
        self.frames = frames if frames is not None else FrameLog()
        self.sync_policy = sync_policy
        self.term = 0
        self._staged: list[tuple[Record, bytes, W | None]] = []

    @property
    def next_txid(self) -> int:
        return self.store.next_txid

    @property
    def pending(self) -> bool:
        """Whether anything is staged and not yet committed."""
        return bool(self._staged) or (self.store.has_unsynced and self._syncs)

    @property
    def _syncs(self) -> bool:
        return self.coalescing or self.sync_policy is SyncPolicy.SYNC

    def stage(self, record: Record, waiter: W | None = None, durable: bool = True) -> None:
        """Append `record` to the log; it counts only after the next `commit`. A change that
        is not durable (a non-durable message in an active-passive cluster) holds its place
        on disk as a SKIP and lives in the frame log (memory, and the replicas) only."""
        frame = encode_frame(record)
        on_disk = frame if durable else encode_frame(Skip(record.txid, record.term))
        self.store.append_frame(record.txid, on_disk)
        self._staged.append((record, frame, waiter))

    def commit(self) -> list[tuple[Record, W | None]]:
        """Make every staged record as durable as the policy says; return them with their waiters.

        Raises StoreError (nothing returned, everything stays staged) if the log cannot
        be written; a later `commit` retries.
        """
        if self._syncs:
            self.store.sync()
        elif self.sync_policy is SyncPolicy.WRITE_NO_SYNC:
            self.store.write_out()
        staged, self._staged = self._staged, []
        append = self.frames.append
        for record, frame, _ in staged:
            append(record.txid, record.term, frame)
        return [(record, waiter) for record, _, waiter in staged]

    def discard_staged(self) -> list[tuple[Record, W | None]]:
        """Cut the log back to before the staged records (they could not be written)."""
        staged, self._staged = self._staged, []
        if staged:
            self.store.truncate_after(staged[0][0].txid - 1)
        return [(record, waiter) for record, _, waiter in staged]

    def flush(self) -> None:
        """Write out what NO_SYNC kept in the process (called now and then)."""
        self.store.write_out()
