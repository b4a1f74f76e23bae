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

While the log cannot be written (a full disk), producers get no new credit and
their staged transfers stay unsettled; the commit is retried every second.

This is a plain proton `Handler` rather than a `MessagingHandler`: it reads a
transfer's bytes and stores them without decoding, and sends stored bytes as
they are; a message is decoded only to mark a redelivery.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from proton import Condition, Connection, Delivery, Endpoint, Event, Handler, Link, Session
from proton.reactor import Container

from broker_ref.commit import GroupCommit
from broker_ref.errors import StoreError
from broker_ref.message_codec import mark_redelivered
from broker_ref.oplog import Code, OperationalLog
from broker_ref.queues import Queue, QueueBook, QueuedMessage
from broker_ref.records import Declare, Dequeue, Enqueue
from broker_ref.roles import Role, RoleTracker

if TYPE_CHECKING:
    from proton._reactor import Acceptor

__all__ = ["AmqpServer"]

PRODUCER_CREDIT = 500
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
MAX_ADDRESS_BYTES = 255
STORE_RETRY_S = 1.0
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
        self._retry_scheduled = False
        self._closing = False

    # ---- lifecycle -------------------------------------------------------------------------

    def on_reactor_quiesced(self, event: Event) -> None:
        if self._commit.pending and not self._retry_scheduled:
            self._commit_staged()
        if not self._closing and self._shutdown_requested():
            self._begin_shutdown()

    def _begin_shutdown(self) -> None:
        self._closing = True
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
        if self._roles.current is not Role.MASTER or self._closing:
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
            self._stage(Declare(self._commit.next_txid, name), None)
        return queue

    def _stage(self, record: Declare | Enqueue | Dequeue, waiter: Delivery | None) -> None:
        self._commit.stage(record, waiter)
        if not self._commit.coalescing and not self._retry_scheduled:
            self._commit_staged()

    def _commit_staged(self) -> None:
        """The commit point: after it, staged enqueues are visible and their producers acked."""
        try:
            committed = self._commit.commit()
        except StoreError as exc:
            if not self._store_failing:
                self._oplog.error(Code.STORE_WRITE_FAILED, f"Store write failed : {exc}")
            self._store_failing = True
            if not self._retry_scheduled:
                self._retry_scheduled = True
                self._schedule(STORE_RETRY_S, self._retry_commit)
            return
        if self._store_failing:
            self._store_failing = False
            self._oplog.info(Code.STORE_WRITES_RESUMED, "Store writes resumed")
            for link in self._producers:
                if link.credit < PRODUCER_CREDIT:
                    link.flow(PRODUCER_CREDIT - link.credit)
        touched: dict[str, Queue] = {}
        get_queue = self._queues.get
        accepted = Delivery.ACCEPTED
        for record, waiter in committed:
            if waiter is not None:
                waiter.update(accepted)
                waiter.settle()
            if type(record) is Enqueue:
                queue = touched.get(record.queue) or get_queue(record.queue)
                if queue is not None:
                    queue.push(QueuedMessage(record.seq, record.body))
                    touched[record.queue] = queue
        for queue in touched.values():
            self._pump_queue(queue)

    def _retry_commit(self) -> None:
        self._retry_scheduled = False
        if self._commit.pending:
            self._commit_staged()

    def _give_back(self, queue: Queue, message: QueuedMessage, redelivered: bool) -> None:
        if redelivered:
            message = QueuedMessage(message.seq, mark_redelivered(message.body))
        queue.give_back(message)

    def _dequeue(self, queue: Queue, message: QueuedMessage) -> None:
        queue.acknowledge(message)
        self._stage(Dequeue(self._commit.next_txid, queue.name, message.seq), None)

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
        if credit < PRODUCER_CREDIT // 2 and not self._store_failing:
            link.flow(PRODUCER_CREDIT - credit)
        record = Enqueue(self._commit.next_txid, queue.name, queue.allocate_seq(), body)
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
