"""Group commit: the one place where staged changes become durable.

The reactor stages each change (a record, and optionally whoever waits for it:
a producer's unsettled transfer) as it happens, and calls `commit` once at the
end of its batch of events: one write and one fsync cover every change staged
in the batch (Broker-J's coalescing sync). Without coalescing, the reactor
commits after every change. Only what `commit` returns may be acknowledged.

The HA step extends `commit` here: after the local fsync, wait for the
replicas' acknowledgements the durability policy asks for.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from broker_ref.log_store import LogStore
from broker_ref.records import Record

__all__ = ["GroupCommit"]

W = TypeVar("W")


class GroupCommit(Generic[W]):
    """Stages records with their waiters; `commit` makes them durable and hands them back."""

    def __init__(self, store: LogStore, coalescing: bool) -> None:
        self.store = store
        self.coalescing = coalescing
        self._staged: list[tuple[Record, W | None]] = []

    @property
    def next_txid(self) -> int:
        return self.store.next_txid

    @property
    def pending(self) -> bool:
        """Whether anything is staged and not yet committed."""
        return bool(self._staged) or self.store.has_unsynced

    def stage(self, record: Record, waiter: W | None = None) -> None:
        """Append `record` to the log; it counts only after the next `commit`."""
        self.store.append(record)
        self._staged.append((record, waiter))

    def commit(self) -> list[tuple[Record, W | None]]:
        """Make every staged record durable and return them in order, with their waiters.

        Raises StoreError (nothing returned, everything stays staged) if the log cannot
        be written; a later `commit` retries.
        """
        self.store.sync()
        committed, self._staged = self._staged, []
        return committed
