"""From a producer's transfer to its settlement, on the node that serves clients.

A change is staged in the group commit as it happens and committed once at the end of
each reactor batch (REACTOR_QUIESCED), so one fsync covers every transfer in the batch.
A committed transfer is settled `accepted` only once the replicas the durability policy
asks for have acknowledged it (`acked_through`); if they do not within
`insufficient_replicas_timeout_s`, the producer's link is closed with an error, so its
outcome is unknown to the client, never a silent success.

In an active-passive cluster (`visible_at_commit`) a committed message is visible to
consumers at once, before the backups hold it, and its producer is settled when every
backup the primary waits for holds it, or when a consumer took it first: such a message
needed no replication, and is counted (`consumed_first`), as the C++ broker's HA module
describes.

While the log cannot be written (a full disk), each batch is refused: the log is cut
back to what it held before the batch, and its producers' transfers are rejected with
amqp:resource-limit-exceeded, never acknowledged and then lost. Every new batch tries
the disk again, so service resumes when space returns.

Reactor thread only.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections import deque
from collections.abc import Callable

from proton import Condition, Delivery, Link

from broker_ref.commit import GroupCommit
from broker_ref.errors import StoreError
from broker_ref.oplog import Code, OperationalLog
from broker_ref.queues import Queue, QueueBook, QueuedMessage
from broker_ref.records import Declare, Dequeue, Enqueue, Record
from broker_ref.roles import Role, RoleTracker

__all__ = ["CommitPath"]

FLUSH_INTERVAL_S = 0.5
ACK_CHECK_S = 0.25


class CommitPath:
    def __init__(
        self,
        commit: GroupCommit[Delivery],
        queues: QueueBook,
        roles: RoleTracker,
        oplog: OperationalLog,
        ack_timeout_s: float,
        pump: Callable[[Queue], None],
        close_producer: Callable[[Link, Condition], None],
        fatal: Callable[[], None],
        visible_at_commit: bool = False,
    ) -> None:
        self.commit = commit
        self._visible_at_commit = visible_at_commit
        # visible_at_commit: each enqueue waiting for the backups, by (queue, seq)
        self._unreplicated: dict[tuple[str, int], Delivery | None] = {}
        self.consumed_first = 0
        self._reported = (0, 0.0)  # (count, when) last logged
        self._queues = queues
        self._roles = roles
        self._oplog = oplog
        self._ack_timeout_s = ack_timeout_s
        self._pump = pump  # hand a queue's new messages to its consumers
        self._close_producer = close_producer
        self._fatal = fatal  # the log cannot even be cut back: stop the node
        self._store_failing = False
        # A master handing over (transfer master) takes no new work: transfers are held by
        # the server, and nothing else (a consumer's dequeue) is stored either, so the chosen
        # node can hold everything this node committed.
        self.suspended = False
        # Wired to the node's group once it exists (it is made after this path).
        self.acks_needed: Callable[[], int] = lambda: 0
        self.on_committed: Callable[[], None] = lambda: None
        # committed records waiting for replica acknowledgements: (txid, record, waiter, since)
        self._awaiting: deque[tuple[int, Record, Delivery | None, float]] = deque()
        self._ack_timeouts = 0

    def stage(
        self, record: Declare | Enqueue | Dequeue, waiter: Delivery | None, durable: bool = True
    ) -> None:
        if self._roles.current is not Role.MASTER or self.suspended:
            # Work that reaches a node that stopped being master, or is handing over (its
            # clients are being disconnected), is not stored: a producer's transfer stays
            # unsettled, so its outcome is unknown to it; a consumer's settlement is lost and
            # the message comes back (the queues are rebuilt from the log, become_follower).
            return
        self.commit.stage(record, waiter, durable)
        if not self.commit.coalescing:
            self.commit_staged()

    def commit_staged(self) -> None:
        """The commit point: after it, staged enqueues are visible and their producers acked."""
        try:
            committed = self.commit.commit()
        except StoreError as exc:
            self._refuse_staged(exc)
            return
        if self._store_failing:
            self._store_failing = False
            self._oplog.info(Code.STORE_WRITES_RESUMED, "Store writes resumed")
        if not committed:
            return
        self.on_committed()
        if self._visible_at_commit:
            self._publish(committed)
        if self.acks_needed() == 0 and not self._awaiting:
            self._settle(committed)
            return
        now = time.monotonic()
        self._awaiting.extend((record.txid, record, waiter, now) for record, waiter in committed)

    def acked_through(self, txid: int) -> None:
        """The replicas the policy asks for hold every record up to `txid`: settle them."""
        done: list[tuple[Record, Delivery | None]] = []
        awaiting = self._awaiting
        while awaiting and awaiting[0][0] <= txid:
            _, record, waiter, _ = awaiting.popleft()
            done.append((record, waiter))
        if done:
            self._settle(done)

    def _publish(self, committed: list[tuple[Record, Delivery | None]]) -> None:
        """Active-passive: committed messages are visible now; a committed dequeue of one
        whose producer still waits for the backups settles it (consumed first)."""
        touched: dict[str, Queue] = {}
        unreplicated = self._unreplicated
        for record, waiter in committed:
            if type(record) is Enqueue:
                unreplicated[(record.queue, record.seq)] = waiter
                queue = touched.get(record.queue) or self._queues.get(record.queue)
                if queue is not None:
                    queue.push(QueuedMessage(record.seq, record.body))
                    touched[record.queue] = queue
            elif type(record) is Dequeue and (record.queue, record.seq) in unreplicated:
                producer = unreplicated.pop((record.queue, record.seq))
                if producer is not None and not producer.settled:
                    producer.update(Delivery.ACCEPTED)
                    producer.settle()
                    self.consumed_first += 1
        for queue in touched.values():
            self._pump(queue)

    def _settle(self, committed: list[tuple[Record, Delivery | None]]) -> None:
        """Acknowledge the producers and make the messages visible to consumers (visible
        already when `visible_at_commit`)."""
        touched: dict[str, Queue] = {}
        get_queue = self._queues.get
        accepted = Delivery.ACCEPTED
        visible = self._visible_at_commit
        for record, waiter in committed:
            if waiter is not None and not waiter.settled:
                waiter.update(accepted)
                waiter.settle()
            if type(record) is Enqueue and visible:
                self._unreplicated.pop((record.queue, record.seq), None)
            elif type(record) is Enqueue:
                queue = touched.get(record.queue) or get_queue(record.queue)
                if queue is not None:
                    queue.push(QueuedMessage(record.seq, record.body))
                    touched[record.queue] = queue
        for queue in touched.values():
            self._pump(queue)

    def fail_late_commits(self) -> None:
        """Acks that never came fail the commit: the producer's link closes, outcome unknown."""
        if not self._awaiting:
            self._ack_timeouts = 0
            return
        deadline = time.monotonic() - self._ack_timeout_s
        late_links: set[Link] = set()
        for i, (txid, record, waiter, since) in enumerate(self._awaiting):
            if since > deadline:
                break
            if waiter is not None and not waiter.settled:
                late_links.add(waiter.link)
                self._awaiting[i] = (txid, record, None, since)
        if not late_links:
            return
        self._ack_timeouts += 1
        if self._ack_timeouts == 1:
            self._oplog.warn(
                Code.COMMIT_TIMED_OUT,
                "Commit timed out waiting for replica acknowledgements"
                f" ({self.acks_needed()} needed) after {self._ack_timeout_s:g} s",
            )
        condition = Condition("amqp:internal-error", "insufficient replica acknowledgements")
        for link in late_links:
            self._close_producer(link, condition)

    def start_timers(
        self,
        schedule: Callable[[float, Callable[[], None]], None],
        closing: Callable[[], bool],
    ) -> None:
        """Periodic work until `closing()`: write out what NO_SYNC keeps; fail commits whose
        acks never came; report messages consumed before replication (active-passive)."""

        def flush() -> None:
            with contextlib.suppress(StoreError):  # reported by the commit path, retried there
                self.commit.flush()
            if not closing():
                schedule(FLUSH_INTERVAL_S, flush)

        def check_acks() -> None:
            self.fail_late_commits()
            if self._visible_at_commit:
                self.report_consumed_first(time.monotonic())
            if not closing():
                schedule(ACK_CHECK_S, check_acks)

        schedule(FLUSH_INTERVAL_S, flush)
        schedule(ACK_CHECK_S, check_acks)

    def report_consumed_first(self, now: float) -> None:
        """Log how many messages were consumed before the backups held them, at most once a
        second and only when the count moved (REF-2011)."""
        if self.consumed_first == self._reported[0] or now - self._reported[1] < 1.0:
            return
        self._reported = (self.consumed_first, now)
        self._oplog.info(
            Code.HA_CONSUMED_FIRST,
            f"Consumed before replication : {self.consumed_first} messages",
        )

    def discard(self) -> None:
        """Stop serving: staged but not committed work is in flight, never replicated, and
        fails with the connections; records waiting for replica acks get no outcome."""
        self.commit.discard_staged()
        self._awaiting.clear()
        self._unreplicated.clear()

    def _refuse_staged(self, exc: StoreError) -> None:
        """The log could not take the batch (a full disk): it is cut back to what it held
        before, and every producer in the batch is told no: rejected, resource-limit-exceeded.
        Nothing refused is ever delivered; the next batch tries the disk again."""
        if not self._store_failing:
            self._oplog.error(Code.STORE_WRITE_FAILED, f"Store write failed : {exc}")
        self._store_failing = True
        try:
            refused = self.commit.discard_staged()
        except StoreError as cut_failed:
            print(f"cannot cut the log back: {cut_failed}", file=sys.stderr)
            self._fatal()
            return
        for _, waiter in refused:
            if waiter is not None and not waiter.settled:
                waiter.local.condition = Condition(
                    "amqp:resource-limit-exceeded", "the store is full: the message was not stored"
                )
                waiter.update(Delivery.REJECTED)
                waiter.settle()
