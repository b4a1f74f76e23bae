"""The AMQP 1.0 side of the node: a proton handler serving queues to producers and consumers.

Addresses are queue names. A client's sender link puts messages on the queue
named by its target; a client's receiver link takes them from the queue named
by its source. A queue is declared (durably) when first attached.

A producer's transfer is staged in the group commit as it arrives and settled
`accepted` only when `commit` returns it, after the fsync; the commit runs once
at the end of each reactor batch (REACTOR_QUIESCED), so one fsync covers every
transfer in the batch. Consumers get unsettled deliveries within their credit;
accepted or rejected → the message leaves the queue (DEQUEUE); released or
modified → it waits again; unsettled when the link or connection goes → it
waits again, marked redelivered. Only a MASTER serves clients.

While the log cannot be written (a full disk), each batch is refused: the log is
cut back to what it held before the batch, and its producers' transfers are
rejected with amqp:resource-limit-exceeded, never acknowledged and then lost.
Every new batch tries the disk again, so service resumes when space returns.

In a group, a committed transfer is settled only once the replicas the
durability policy asks for have acknowledged it (`acked_through`); if they do
not within `insufficient_replicas_timeout_s`, the producer's link is closed with
an error, so its outcome is unknown to the client, never a silent success. A
replica applies its master's records (`apply`), and a rejoining node discards
what its master never had (`rollback`).

This is a plain proton `Handler` rather than a `MessagingHandler`: it reads a
transfer's bytes and stores them without decoding, and sends stored bytes as
they are; a message is decoded only to mark a redelivery.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from proton import Condition, Connection, Delivery, Endpoint, Event, Handler, Link, Session
from proton.reactor import Container

from broker_ref.commit import GroupCommit
from broker_ref.durability import SyncPolicy
from broker_ref.errors import StoreError
from broker_ref.message_codec import mark_redelivered
from broker_ref.oplog import Code, OperationalLog
from broker_ref.queues import Queue, QueueBook, QueuedMessage
from broker_ref.records import Declare, Dequeue, Enqueue, Record, decode_payload
from broker_ref.roles import Role, RoleTracker

if TYPE_CHECKING:
    from proton._reactor import Acceptor

__all__ = ["AmqpServer"]

PRODUCER_CREDIT = 500
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
MAX_ADDRESS_BYTES = 255
FLUSH_INTERVAL_S = 0.5
ACK_CHECK_S = 0.25
SHUTDOWN_GRACE_S = 1.0
FORCED = "amqp:connection:forced"
_OUTCOMES = (Delivery.ACCEPTED, Delivery.REJECTED, Delivery.RELEASED, Delivery.MODIFIED)


@dataclass(eq=False)
class _Consumer:
    """A client's receiver link: where it reads from and what it holds unsettled."""

    link: Link
    queue: Queue
    presettled: bool
    inflight: dict[Delivery, QueuedMessage] = field(default_factory=dict)
    next_tag: int = 0


class _Timer(Handler):
    def __init__(self, action: Callable[[], None]) -> None:
        self._action = action

    def on_timer_task(self, event: Event) -> None:
        self._action()


class AmqpServer(Handler):
    """Serves AMQP clients on behalf of one node; runs entirely in the reactor thread."""

    def __init__(
        self,
        container: Container,
        acceptor: Acceptor,
        node: str,
        idle_timeout_s: float,
        queues: QueueBook,
        commit: GroupCommit[Delivery],
        roles: RoleTracker,
        oplog: OperationalLog,
        shutdown_requested: Callable[[], bool],
        acks_needed: Callable[[], int] = lambda: 0,
        on_committed: Callable[[], None] = lambda: None,
        replica_sync: SyncPolicy = SyncPolicy.NO_SYNC,
        insufficient_replicas_timeout_s: float = 5.0,
    ) -> None:
        self._node = node
        self._idle_timeout_s = idle_timeout_s
        self._queues = queues
        self._commit = commit
        self._roles = roles
        self._oplog = oplog
        self._shutdown_requested = shutdown_requested
        self._container = container
        self._acceptor = acceptor
        self._connections: set[Connection] = set()
        self._producers: dict[Link, Queue] = {}
        self._consumers: dict[Link, _Consumer] = {}
        self._consumers_by_queue: dict[str, list[_Consumer]] = {}
        self._store_failing = False
        self._closing = False
        self._acks_needed = acks_needed
        self._on_committed = on_committed
        self._replica_sync = replica_sync
        self._ack_timeout_s = insufficient_replicas_timeout_s
        # committed records waiting for replica acknowledgements: (txid, record, waiter, since)
        self._awaiting: deque[tuple[int, Record, Delivery | None, float]] = deque()
        self._ack_timeouts = 0
        self._suspended = False
        self._held: list[tuple[Link, Delivery, bytes]] = []
        self._timers_started = False

    @property
    def queues(self) -> QueueBook:
        return self._queues

    def wire_group(self, acks_needed: Callable[[], int], on_committed: Callable[[], None]) -> None:
        """Connect the commit path to the node's group (made after this server)."""
        self._acks_needed = acks_needed
        self._on_committed = on_committed

    def start_timers(self) -> None:
        """Periodic work: write out what NO_SYNC keeps, fail commits whose acks never came."""
        if not self._timers_started:
            self._timers_started = True
            self._schedule(FLUSH_INTERVAL_S, self._flush_tick)
            self._schedule(ACK_CHECK_S, self._ack_tick)

    def _flush_tick(self) -> None:
        with contextlib.suppress(StoreError):  # reported by the commit path, retried there
            self._commit.flush()
        if not self._closing:
            self._schedule(FLUSH_INTERVAL_S, self._flush_tick)

    def _ack_tick(self) -> None:
        self._fail_late_commits()
        if not self._closing:
            self._schedule(ACK_CHECK_S, self._ack_tick)

    # ---- lifecycle -------------------------------------------------------------------------

    def on_reactor_quiesced(self, event: Event) -> None:
        if self._commit.pending:
            self._commit_staged()
        if not self._closing and self._shutdown_requested():
            self._begin_shutdown()

    def _begin_shutdown(self) -> None:
        self._closing = True
        self._roles.change(Role.DETACHED)  # leaving the group: no longer master or replica
        if self._commit.pending:
            self._commit_staged()
        self._acceptor.close()
        self.disconnect_clients("broker shutting down")
        self._stop_when_idle()
        self._schedule(SHUTDOWN_GRACE_S, self._stop)

    def _stop_when_idle(self) -> None:
        if self._closing and not self._connections:
            self._stop()

    def _stop(self) -> None:
        self._container.stop()

    def disconnect_clients(self, description: str) -> None:
        """Close every client connection with amqp:connection:forced."""
        for connection in list(self._connections):
            connection.condition = Condition(FORCED, description)
            connection.close()

    def _schedule(self, delay_s: float, action: Callable[[], None]) -> None:
        self._container.schedule(delay_s, _Timer(action))

    # ---- connections and sessions ------------------------------------------------------------

    def on_connection_init(self, event: Event) -> None:
        _connection(event).container = self._node

    def on_connection_bound(self, event: Event) -> None:
        if self._idle_timeout_s > 0 and event.transport is not None:
            event.transport.idle_timeout = self._idle_timeout_s

    def on_connection_remote_open(self, event: Event) -> None:
        connection = _connection(event)
        if connection.state & Endpoint.LOCAL_UNINIT == 0:
            return
        if self._roles.current is not Role.MASTER or self._closing or self._suspended:
            connection.condition = Condition(FORCED, "not the master")
            connection.open()
            connection.close()
            return
        connection.open()
        self._connections.add(connection)
        self._oplog.info(
            Code.CONNECTION_OPEN,
            f"Open : Peer : {connection.url} : Protocol Version : 1.0"
            f" : Client ID : {connection.remote_container}",
        )

    def on_connection_remote_close(self, event: Event) -> None:
        connection = _connection(event)
        self._drop_connection(connection)
        if connection.state & Endpoint.LOCAL_ACTIVE:
            connection.close()

    def on_transport_error(self, event: Event) -> None:
        condition = event.transport.condition if event.transport is not None else None
        if condition is not None:
            print(f"transport error: {condition.name}: {condition.description}", file=sys.stderr)

    def on_transport_closed(self, event: Event) -> None:
        if event.connection is not None:
            self._drop_connection(event.connection)

    def on_session_remote_open(self, event: Event) -> None:
        session = _session(event)
        if session.state & Endpoint.LOCAL_UNINIT and session.connection in self._connections:
            session.open()

    def on_session_remote_close(self, event: Event) -> None:
        session = _session(event)
        for link in [*self._producers, *self._consumers]:
            if link.session == session:
                self._drop_link(link)
        if session.state & Endpoint.LOCAL_ACTIVE:
            session.close()

    def _drop_connection(self, connection: Connection) -> None:
        if connection not in self._connections:
            return
        self._connections.discard(connection)
        for link in [*self._producers, *self._consumers]:
            if link.connection == connection:
                self._drop_link(link)
        self._oplog.info(Code.CONNECTION_CLOSE, f"Close : Peer : {connection.url}")
        self._stop_when_idle()

    # ---- links -------------------------------------------------------------------------------

    def on_link_remote_open(self, event: Event) -> None:
        link = _link(event)
        if link.connection not in self._connections or link.state & Endpoint.LOCAL_UNINIT == 0:
            return
        terminus = link.remote_target if link.is_receiver else link.remote_source
        address = terminus.address
        if not address or terminus.dynamic:
            self._refuse_link(link, "amqp:invalid-field", "a queue name is required as address")
            return
        if len(address.encode("utf-8")) > MAX_ADDRESS_BYTES:
            self._refuse_link(link, "amqp:invalid-field", "queue name too long")
            return
        queue = self._declare(address)
        link.source.copy(link.remote_source)
        link.target.copy(link.remote_target)
        if link.is_receiver:
            link.open()
            link.flow(PRODUCER_CREDIT)
            self._producers[link] = queue
            return
        presettled = link.remote_snd_settle_mode == Link.SND_SETTLED
        if presettled:
            link.snd_settle_mode = Link.SND_SETTLED
        link.open()
        consumer = _Consumer(link, queue, presettled)
        self._consumers[link] = consumer
        self._consumers_by_queue.setdefault(queue.name, []).append(consumer)
        self._pump(consumer)

    def _refuse_link(self, link: Link, name: str, description: str) -> None:
        link.condition = Condition(name, description)
        link.open()
        link.close()

    def on_link_remote_close(self, event: Event) -> None:
        self._end_link(_link(event))

    def on_link_remote_detach(self, event: Event) -> None:
        self._end_link(_link(event))

    def _end_link(self, link: Link) -> None:
        self._drop_link(link)
        if link.state & Endpoint.LOCAL_ACTIVE:
            link.close()

    def _drop_link(self, link: Link) -> None:
        self._producers.pop(link, None)
        consumer = self._consumers.pop(link, None)
        if consumer is None:
            return
        self._consumers_by_queue[consumer.queue.name].remove(consumer)
        inflight = sorted(consumer.inflight.items(), key=lambda item: item[1].seq)
        consumer.inflight.clear()
        for delivery, message in inflight:
            self._give_back(consumer.queue, message, redelivered=True)
            delivery.settle()
        if inflight:
            self._pump_queue(consumer.queue)

    def on_link_flow(self, event: Event) -> None:
        link = event.link
        consumer = self._consumers.get(link) if link is not None else None
        if consumer is not None:
            self._pump(consumer)

    # ---- queues --------------------------------------------------------------------------------

    def _declare(self, name: str) -> Queue:
        queue = self._queues.get(name)
        if queue is None:
            queue = self._queues.add(name)
            self._stage(Declare(self._commit.next_txid, name, self._commit.term), None)
        return queue

    def _stage(self, record: Declare | Enqueue | Dequeue, waiter: Delivery | None) -> None:
        if self._roles.current is not Role.MASTER:
            # Work that reaches a node that just stopped being master (its clients are being
            # disconnected) is not stored: a producer's transfer stays unsettled, so its
            # outcome is unknown to it; the queues are rebuilt from the log (become_follower).
            return
        self._commit.stage(record, waiter)
        if not self._commit.coalescing:
            self._commit_staged()

    def _commit_staged(self) -> None:
        """The commit point: after it, staged enqueues are visible and their producers acked."""
        try:
            committed = self._commit.commit()
        except StoreError as exc:
            self._refuse_staged(exc)
            return
        if self._store_failing:
            self._store_failing = False
            self._oplog.info(Code.STORE_WRITES_RESUMED, "Store writes resumed")
        if not committed:
            return
        self._on_committed()
        if self._acks_needed() == 0 and not self._awaiting:
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

    def _settle(self, committed: list[tuple[Record, Delivery | None]]) -> None:
        """Acknowledge the producers and make the messages visible to consumers."""
        touched: dict[str, Queue] = {}
        get_queue = self._queues.get
        accepted = Delivery.ACCEPTED
        for record, waiter in committed:
            if waiter is not None and not waiter.settled:
                waiter.update(accepted)
                waiter.settle()
            if type(record) is Enqueue:
                queue = touched.get(record.queue) or get_queue(record.queue)
                if queue is not None:
                    queue.push(QueuedMessage(record.seq, record.body))
                    touched[record.queue] = queue
        for queue in touched.values():
            self._pump_queue(queue)

    def _fail_late_commits(self) -> None:
        """Acks that never came fail the commit: the producer's link closes, outcome unknown."""
        if not self._awaiting:
            self._ack_timeouts = 0
            return
        deadline = time.monotonic() - self._ack_timeout_s
        late_links: set[Link] = set()
        for i, (txid, record, waiter, since) in enumerate(self._awaiting):
            if since > deadline:
                break
            if waiter is not None:
                late_links.add(waiter.link)
                self._awaiting[i] = (txid, record, None, since)
        if not late_links:
            return
        self._ack_timeouts += 1
        if self._ack_timeouts == 1:
            self._oplog.warn(
                Code.COMMIT_TIMED_OUT,
                "Commit timed out waiting for replica acknowledgements"
                f" ({self._acks_needed()} needed) after {self._ack_timeout_s:g} s",
            )
        for link in late_links:
            if link.state & Endpoint.LOCAL_ACTIVE:
                link.condition = Condition(
                    "amqp:internal-error", "insufficient replica acknowledgements"
                )
                link.close()
            self._producers.pop(link, None)

    # ---- the group's requests (run in this thread through the mailbox) -------------------------

    def become_master(self, term: int) -> None:
        """Serve clients in `term`; what was held during a transfer attempt is staged now."""
        self._commit.term = term
        self._suspended = False
        held, self._held = self._held, []
        for link, delivery, body in held:
            queue = self._producers.get(link)
            if queue is not None:
                self._enqueue(queue, body, delivery)
        if self._roles.current is not Role.MASTER:
            self._oplog.info(Code.RECOVERY_COMPLETE, "Recovery Complete")
            self._roles.change(Role.MASTER)

    def become_follower(self, role: Role) -> None:
        """Stop serving: clients are disconnected; commits in flight get no outcome."""
        was_master = self._roles.current is Role.MASTER
        self._suspended = False
        self._held = []
        # Staged but not committed: in flight, never replicated; it fails with the connections.
        self._commit.discard_staged()
        self._awaiting.clear()
        self._roles.change(role)
        # A replica's queues are exactly its log: messages handed out, acknowledged or
        # waiting for replica acks as master all count again as the log says.
        self._rebuild_queues()
        if was_master:
            self._oplog.info(Code.STORE_PASSIVATED, "Store Passivated")
        self.disconnect_clients("not the master")

    def _rebuild_queues(self) -> None:
        frames = self._commit.frames.frames(1, 1 << 62) if self._commit.frames.last_txid else []
        records = [decode_payload(memoryview(frame)[8:]) for frame in frames]
        self._queues.replace(QueueBook.recover(records))

    def suspend(self) -> int:
        """Transfer master, step 2: take no new work (transfers that arrive are held); commit
        what is staged; return the last transaction the chosen node must hold."""
        self._suspended = True
        if self._commit.pending:
            self._commit_staged()
        return self._commit.frames.last_txid

    def abort_suspended(self) -> None:
        """Transfer master, step 3: abort held transfers by disconnecting their clients."""
        self._held = []
        self.disconnect_clients("master transfer")

    def apply(self, frames: list[bytes]) -> int:
        """A replica stores and applies its master's records; return the last txid held."""
        store = self._commit.store
        log = self._commit.frames
        queues = self._queues
        for frame in frames:
            record = decode_payload(memoryview(frame)[8:])
            if record.txid <= store.last_txid:
                if log.term_at(record.txid) == record.term:
                    continue  # already held
                self._discard_diverged(record.txid - 1)
                queues = self._queues
            store.append_frame(record.txid, frame)
            log.append(record.txid, record.term, frame)
            queues.apply(record)
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
        self._rebuild_queues()
        return dropped

    def _refuse_staged(self, exc: StoreError) -> None:
        """The log could not take the batch (a full disk): it is cut back to what it held
        before, and every producer in the batch is told no: rejected, resource-limit-exceeded.
        Nothing refused is ever delivered; the next batch tries the disk again."""
        if not self._store_failing:
            self._oplog.error(Code.STORE_WRITE_FAILED, f"Store write failed : {exc}")
        self._store_failing = True
        try:
            refused = self._commit.discard_staged()
        except StoreError as cut_failed:
            print(f"cannot cut the log back: {cut_failed}", file=sys.stderr)
            self._container.stop()
            return
        for _, waiter in refused:
            if waiter is not None and not waiter.settled:
                waiter.local.condition = Condition(
                    "amqp:resource-limit-exceeded", "the store is full: the message was not stored"
                )
                waiter.update(Delivery.REJECTED)
                waiter.settle()

    def _give_back(self, queue: Queue, message: QueuedMessage, redelivered: bool) -> None:
        if redelivered:
            message = QueuedMessage(message.seq, mark_redelivered(message.body))
        queue.give_back(message)

    def _dequeue(self, queue: Queue, message: QueuedMessage) -> None:
        queue.acknowledge(message)
        record = Dequeue(self._commit.next_txid, queue.name, message.seq, self._commit.term)
        self._stage(record, None)

    # ---- transfers -----------------------------------------------------------------------------

    def on_delivery(self, event: Event) -> None:
        delivery = event.delivery
        if delivery is None:
            return
        link = delivery.link
        if link.is_receiver:
            self._on_transfer(link, delivery)
        else:
            self._on_outcome(link, delivery)

    def _on_transfer(self, link: Link, delivery: Delivery) -> None:
        if delivery.aborted:
            delivery.settle()
            return
        if delivery.partial:
            return
        queue = self._producers.get(link)
        body = link.recv(delivery.pending)
        link.advance()
        if queue is None or body is None:
            delivery.update(Delivery.RELEASED)
            delivery.settle()
            return
        if len(body) > MAX_MESSAGE_BYTES:
            delivery.local.condition = Condition(
                "amqp:link:message-size-exceeded", f"larger than {MAX_MESSAGE_BYTES} bytes"
            )
            delivery.update(Delivery.REJECTED)
            delivery.settle()
            return
        credit = link.credit
        if credit < PRODUCER_CREDIT // 2:
            link.flow(PRODUCER_CREDIT - credit)
        if self._suspended:
            self._held.append((link, delivery, body))
            return
        self._enqueue(queue, body, delivery)

    def _enqueue(self, queue: Queue, body: bytes, delivery: Delivery | None) -> None:
        term = self._commit.term
        record = Enqueue(self._commit.next_txid, queue.name, queue.allocate_seq(), body, term)
        self._stage(record, delivery)

    def _on_outcome(self, link: Link, delivery: Delivery) -> None:
        consumer = self._consumers.get(link)
        state = delivery.remote_state
        if not delivery.settled and state not in _OUTCOMES:
            return
        message = consumer.inflight.pop(delivery, None) if consumer is not None else None
        delivery.settle()
        if consumer is None or message is None:
            return
        queue = consumer.queue
        if state == Delivery.ACCEPTED or state == Delivery.REJECTED:
            self._dequeue(queue, message)
            return
        failed = state == Delivery.MODIFIED and bool(delivery.remote.failed)
        self._give_back(queue, message, redelivered=failed)
        self._pump_queue(queue)

    def _pump_queue(self, queue: Queue) -> None:
        consumers = self._consumers_by_queue.get(queue.name)
        if not consumers:
            return
        for consumer in consumers:
            self._pump(consumer)
        if len(consumers) > 1:
            consumers.append(consumers.pop(0))

    def _pump(self, consumer: _Consumer) -> None:
        """Send waiting messages while the consumer has credit; complete a drain when empty."""
        link = consumer.link
        queue = consumer.queue
        credit = link.credit
        while credit > 0:
            message = queue.take()
            if message is None:
                break
            consumer.next_tag += 1
            delivery = link.delivery(str(consumer.next_tag))
            link.stream(message.body)
            link.advance()
            credit -= 1
            if consumer.presettled:
                delivery.settle()
                self._dequeue(queue, message)
            else:
                consumer.inflight[delivery] = message
        if credit > 0 and link.drain_mode:
            link.drained()


def _connection(event: Event) -> Connection:
    connection = event.connection
    assert connection is not None, event
    return connection


def _session(event: Event) -> Session:
    session = event.session
    assert session is not None, event
    return session


def _link(event: Event) -> Link:
    link = event.link
    assert link is not None, event
    return link
