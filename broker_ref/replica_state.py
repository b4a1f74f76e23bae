"""A node's copy of its master's records: apply them, roll back what diverged, rebuild the
queues from the log.

A replica stores and applies its master's records as they stream in (`apply`), syncing or
writing them out as the replica sync policy says. A rejoining node discards what its
master never had (`rollback`), or everything before a full copy. A replica's queues are
exactly its log, so after any of these the queues are rebuilt from it.

Reactor thread only.
"""

from __future__ import annotations

from proton import Delivery

from broker_ref.commit import GroupCommit
from broker_ref.durability import SyncPolicy
from broker_ref.message_codec import is_durable
from broker_ref.oplog import Code, OperationalLog
from broker_ref.queues import QueueBook
from broker_ref.records import Enqueue, Skip, decode_payload, encode_frame

__all__ = ["ReplicaState"]


class ReplicaState:
    def __init__(
        self,
        commit: GroupCommit[Delivery],
        queues: QueueBook,
        oplog: OperationalLog,
        replica_sync: SyncPolicy,
        durable_only: bool = False,
    ) -> None:
        self._commit = commit
        self._queues = queues
        self._oplog = oplog
        self._replica_sync = replica_sync
        # Active-passive: a non-durable message holds its place on disk as a SKIP.
        self._durable_only = durable_only

    def apply(self, frames: list[bytes]) -> int:
        """Store and apply the master's records; return the last txid held."""
        store = self._commit.store
        log = self._commit.frames
        for frame in frames:
            record = decode_payload(memoryview(frame)[8:])
            if record.txid <= store.last_txid:
                if log.term_at(record.txid) == record.term:
                    continue  # already held
                self._discard_diverged(record.txid - 1)
            on_disk = frame
            if self._durable_only and type(record) is Enqueue and not is_durable(record.body):
                on_disk = encode_frame(Skip(record.txid, record.term))
            store.append_frame(record.txid, on_disk)
            log.append(record.txid, record.term, frame)
            self._queues.apply(record)
        if self._replica_sync is SyncPolicy.SYNC:
            store.sync()
        elif self._replica_sync is SyncPolicy.WRITE_NO_SYNC:
            store.write_out()
        return store.last_txid

    def _discard_diverged(self, keep_through: int) -> None:
        """This node holds records its master never had (written as master just before it
        stepped down): they go, as any diverged transactions do."""
        dropped = self.rollback(keep_through)
        if dropped:
            self._oplog.warn(Code.TRANSACTIONS_DISCARDED, "Diverged transactions discarded")
            self._oplog.warn(
                Code.ROLLED_BACK,
                f"Rolled back {dropped} transactions after txid {keep_through} to follow"
                " the master's stream",
            )

    def rollback(self, keep_through: int) -> int:
        """Discard every record after `keep_through`; rebuild the queues; return how many went."""
        dropped = self._commit.store.truncate_after(keep_through)
        self._commit.frames.truncate_after(keep_through)
        self.rebuild_queues()
        return dropped

    def rebuild_queues(self) -> None:
        """The queues as the log says: messages handed out, acknowledged or waiting for
        replica acks as master all count again as the log says."""
        self._queues.replace(QueueBook.recover(self._commit.frames.records()))
