"""The in-memory queues: committed messages waiting, handed out, and given back.

A queue hands messages out lowest sequence number first. A message handed out
is unacked until its consumer settles it: `acknowledge` (accepted or rejected,
it leaves the queue) or `give_back` (released, or its link dropped: it goes
back in front of everything not yet handed out, in sequence order).

Only the reactor thread changes queues. The management thread reads them
through `QueueBook.stats`, which takes the book's lock for the set of queues
and reads each queue's counters (single attribute reads, atomic in CPython).
"""

from __future__ import annotations

import heapq
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from broker_ref.records import Declare, Dequeue, Enqueue, Record, Skip

__all__ = ["Queue", "QueueBook", "QueueStats", "QueuedMessage"]


@dataclass(frozen=True, slots=True)
class QueuedMessage:
    """A committed message: its place in its queue and its encoded AMQP bytes."""

    seq: int
    body: bytes


@dataclass(frozen=True)
class QueueStats:
    """What the management API shows for one queue."""

    depth: int
    unacked: int


class Queue:
    """One durable queue."""

    def __init__(self, name: str, next_seq: int = 1, replicate: str | None = None) -> None:
        self.name = name
        # How an active-passive primary replicates it (none / configuration / all); None:
        # the broker's default (`ha_replicate`). Read from any thread (one attribute).
        self.replicate = replicate
        self._next_seq = next_seq
        self._ready: deque[QueuedMessage] = deque()
        self._returned: list[tuple[int, QueuedMessage]] = []
        self._unacked = 0

    def allocate_seq(self) -> int:
        """The sequence number for the next message staged for this queue."""
        seq = self._next_seq
        self._next_seq += 1
        return seq

    def push(self, message: QueuedMessage) -> None:
        """Add a committed message at the back."""
        self._ready.append(message)

    def take(self) -> QueuedMessage | None:
        """Hand out the first waiting message, or None if nothing waits."""
        if self._returned:
            message = heapq.heappop(self._returned)[1]
        elif self._ready:
            message = self._ready.popleft()
        else:
            return None
        self._unacked += 1
        return message

    def acknowledge(self, message: QueuedMessage) -> None:
        """A handed-out message was settled for good; it has left the queue."""
        self._unacked -= 1

    def remove(self, seq: int) -> None:
        """A replica applies its master's DEQUEUE: the message leaves, wherever it waits."""
        if self._ready and self._ready[0].seq == seq:
            self._ready.popleft()
            return
        for i, message in enumerate(self._ready):
            if message.seq == seq:
                del self._ready[i]
                return
        for i, (s, _) in enumerate(self._returned):
            if s == seq:
                self._returned.pop(i)
                heapq.heapify(self._returned)
                return

    def follow_seq(self, seq: int) -> None:
        """Keep this queue's sequence numbers above one its master allocated."""
        self._next_seq = max(self._next_seq, seq + 1)

    def give_back(self, message: QueuedMessage) -> None:
        """A handed-out message was not consumed; it waits again, in front."""
        self._unacked -= 1
        heapq.heappush(self._returned, (message.seq, message))

    @property
    def has_waiting(self) -> bool:
        return bool(self._returned) or bool(self._ready)

    @property
    def depth(self) -> int:
        """Messages waiting to be handed out."""
        return len(self._returned) + len(self._ready)

    @property
    def unacked(self) -> int:
        """Messages handed out and not yet settled."""
        return self._unacked

    def stats(self) -> QueueStats:
        return QueueStats(depth=self.depth, unacked=self._unacked)

    def waiting(self) -> list[QueuedMessage]:
        """The waiting messages in the order they would be handed out (for tests and tools)."""
        return [m for _, m in sorted(self._returned)] + list(self._ready)


class QueueBook:
    """All queues of one node, by name."""

    def __init__(self) -> None:
        self._queues: dict[str, Queue] = {}
        self._lock = threading.Lock()

    @classmethod
    def recover(cls, records: Iterable[Record]) -> QueueBook:
        """Rebuild the queues from the log: declared queues and the messages not dequeued."""
        live: dict[str, dict[int, bytes]] = {}
        next_seq: dict[str, int] = {}
        levels: dict[str, str | None] = {}
        for record in records:
            if isinstance(record, Enqueue):
                live.setdefault(record.queue, {})[record.seq] = record.body
                next_seq[record.queue] = max(next_seq.get(record.queue, 1), record.seq + 1)
            elif isinstance(record, Dequeue):
                live.get(record.queue, {}).pop(record.seq, None)
            elif isinstance(record, Declare):
                live.setdefault(record.queue, {})
                levels[record.queue] = record.replicate or levels.get(record.queue)
        book = cls()
        for name, messages in live.items():
            queue = Queue(name, next_seq.get(name, 1), levels.get(name))
            for seq in sorted(messages):
                queue.push(QueuedMessage(seq, messages[seq]))
            book._queues[name] = queue
        return book

    def apply(self, record: Record) -> Queue | None:
        """Apply one of the master's records, as a replica does; return the queue it touched
        (None for a SKIP, which holds a transaction's place and touches nothing)."""
        if isinstance(record, Skip):
            return None
        queue = self._queues.get(record.queue) or self.add(record.queue)
        if isinstance(record, Declare) and record.replicate is not None:
            queue.replicate = record.replicate
        if isinstance(record, Enqueue):
            queue.push(QueuedMessage(record.seq, record.body))
            queue.follow_seq(record.seq)
        elif isinstance(record, Dequeue):
            queue.remove(record.seq)
        return queue

    def replace(self, other: QueueBook) -> None:
        """Take another book's queues (after a rollback rebuilt them from the log)."""
        with self._lock:
            self._queues = dict(other._queues)

    def get(self, name: str) -> Queue | None:
        return self._queues.get(name)

    def level_of(self, name: str) -> str | None:
        """The replication level `name` was declared with (None: none given); any thread."""
        queue = self._queues.get(name)
        return None if queue is None else queue.replicate

    def add(self, name: str, replicate: str | None = None) -> Queue:
        """Create the queue `name`; the caller records its DECLARE."""
        queue = Queue(name, replicate=replicate)
        with self._lock:
            self._queues[name] = queue
        return queue

    @property
    def message_count(self) -> int:
        """Messages waiting or unacked, over all queues."""
        return sum(q.depth + q.unacked for q in self._queues.values())

    def stats(self) -> dict[str, QueueStats]:
        """Depth and unacked per queue; safe to call from any thread."""
        with self._lock:
            queues = list(self._queues.values())
        return {q.name: q.stats() for q in queues}
