"""The AMQP 1.0 side of the node: a proton handler serving queues to producers and consumers.

Addresses are queue names. A client's sender link puts messages on the queue
named by its target; a client's receiver link takes them from the queue named
by its source. A queue is declared (durably) when first attached.

A producer's transfer goes down the commit path (commit_path.py): staged, committed
at the end of the reactor's batch, settled `accepted` once durable and acknowledged
by the replicas the policy asks for. Consumers get unsettled deliveries within their
credit; accepted or rejected → the message leaves the queue (DEQUEUE); released or
modified → it waits again; unsettled when the link or connection goes → it waits
again, marked redelivered. Only a MASTER serves clients; a node that is not one holds
its master's copy (replica_state.py).

This is a plain proton `Handler` rather than a `MessagingHandler`: it reads a
transfer's bytes and stores them without decoding, and sends stored bytes as
they are; a message is decoded only to mark a redelivery.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from proton import Condition, Connection, Delivery, Endpoint, Event, Handler, Link
from proton.reactor import Container

from broker_ref.commit import GroupCommit
from broker_ref.commit_path import CommitPath
from broker_ref.connection_guard import ConnectionGuard, ConnectionLimits
from broker_ref.consumers import Consumers
from broker_ref.declarations import Declarations, replication_level
from broker_ref.durability import SyncPolicy
from broker_ref.message_codec import is_durable
from broker_ref.oplog import Code, OperationalLog
from broker_ref.proton_events import Timer, connection_of, link_of, session_of
from broker_ref.queues import Queue, QueueBook, QueuedMessage
from broker_ref.records import LEVELS, Dequeue, Enqueue
from broker_ref.replica_state import ReplicaState
from broker_ref.roles import Role, RoleTracker

if TYPE_CHECKING:
    from proton._reactor import Acceptor

__all__ = ["AmqpServer"]

PRODUCER_CREDIT = 500
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
MAX_ADDRESS_BYTES = 255
SHUTDOWN_GRACE_S = 1.0
FORCED = "amqp:connection:forced"
_OUTCOMES = (Delivery.ACCEPTED, Delivery.REJECTED, Delivery.RELEASED, Delivery.MODIFIED)


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
        active_passive: bool = False,
        limits: ConnectionLimits = ConnectionLimits(),  # noqa: B008 (frozen)
    ) -> None:
        self._node = node
        # Active-passive: messages are visible at commit, a non-durable one stays off the
        # disk, a queue is declared with its replication level (`qpid.replicate`), and a
        # commit waits for the backups without a timeout (a dead one is given up instead).
        self._active_passive = active_passive
        self._idle_timeout_s = idle_timeout_s
        self._queues = queues
        self._commit = commit
        self.commit_path = CommitPath(
            commit,
            queues,
            roles,
            oplog,
            float("inf") if active_passive else insufficient_replicas_timeout_s,
            pump=lambda queue: self.consumers.pump_queue(queue),
            close_producer=self._close_producer,
            fatal=container.stop,
            visible_at_commit=active_passive,
        )
        self.commit_path.acks_needed = acks_needed
        self.commit_path.on_committed = on_committed
        self.replica = ReplicaState(
            commit, queues, oplog, replica_sync, durable_only=active_passive
        )
        self._roles = roles
        self._oplog = oplog
        self._shutdown_requested = shutdown_requested
        self._container = container
        self._acceptor = acceptor
        self._connections: set[Connection] = set()
        self._guard = ConnectionGuard(container, limits, oplog)
        self._producers: dict[Link, Queue] = {}
        self.consumers = Consumers(self._dequeue)
        self.declarations = Declarations(queues, commit, self.commit_path, roles, oplog)
        self._closing = False
        self._held: list[tuple[Link, Delivery, bytes]] = []
        self._held_dequeues: list[tuple[str, int]] = []
        self._timers_started = False

    @property
    def queues(self) -> QueueBook:
        return self._queues

    def start_timers(self) -> None:
        """The commit path's periodic work, until the server closes."""
        if not self._timers_started:
            self._timers_started = True
            self.commit_path.start_timers(self._schedule, lambda: self._closing)
            self._guard.start(lambda: self._closing)

    # ---- lifecycle -------------------------------------------------------------------------

    def on_reactor_quiesced(self, event: Event) -> None:
        if self._commit.pending:
            self.commit_path.commit_staged()
        if not self._closing and self._shutdown_requested():
            self._begin_shutdown()

    def _begin_shutdown(self) -> None:
        self._closing = True
        self._roles.change(Role.DETACHED)  # leaving the group: no longer master or replica
        if self._commit.pending:
            self.commit_path.commit_staged()
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
        self._container.schedule(delay_s, Timer(action))

    # ---- connections and sessions ------------------------------------------------------------

    def on_connection_init(self, event: Event) -> None:
        connection_of(event).container = self._node

    def on_connection_bound(self, event: Event) -> None:
        self._guard.bound(event)
        if self._idle_timeout_s > 0 and event.transport is not None:
            event.transport.idle_timeout = self._idle_timeout_s

    def on_connection_remote_open(self, event: Event) -> None:
        connection = connection_of(event)
        if connection.state & Endpoint.LOCAL_UNINIT == 0 or not self._guard.admit(connection):
            return
        if self._roles.current is not Role.MASTER or self._closing or self.commit_path.suspended:
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
        connection = connection_of(event)
        self._drop_connection(connection)
        if connection.state & (Endpoint.LOCAL_ACTIVE | Endpoint.LOCAL_UNINIT):  # also: no open
            connection.close()

    def on_transport_error(self, event: Event) -> None:
        self._guard.transport_error(event)

    def on_transport_tail_closed(self, event: Event) -> None:
        self._guard.tail_closed(event)

    def on_transport_closed(self, event: Event) -> None:
        self._guard.closed(event)
        if event.connection is not None:
            self._drop_connection(event.connection)

    def on_session_remote_open(self, event: Event) -> None:
        session = session_of(event)
        if session.state & Endpoint.LOCAL_UNINIT and session.connection in self._connections:
            session.open()

    def on_session_remote_close(self, event: Event) -> None:
        session = session_of(event)
        for link in [*self._producers, *self.consumers.links()]:
            if link.session == session:
                self._drop_link(link)
        if session.state & Endpoint.LOCAL_ACTIVE:
            session.close()

    def _drop_connection(self, connection: Connection) -> None:
        if connection not in self._connections:
            return
        self._connections.discard(connection)
        for link in [*self._producers, *self.consumers.links()]:
            if link.connection == connection:
                self._drop_link(link)
        self._oplog.info(Code.CONNECTION_CLOSE, f"Close : Peer : {connection.url}")
        self._stop_when_idle()

    # ---- links -------------------------------------------------------------------------------

    def on_link_remote_open(self, event: Event) -> None:
        link = link_of(event)
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
        replicate = replication_level(link) if self._active_passive else None
        if replicate not in (None, *LEVELS):
            self._refuse_link(link, "amqp:invalid-field", f"qpid.replicate {replicate!r}")
            return
        queue = self.declarations.declare(address, replicate)
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
        self.consumers.add(link, queue, presettled)

    def _close_producer(self, link: Link, condition: Condition) -> None:
        """Close a producer's link with an error: its unsettled transfers' outcome is unknown."""
        if link.state & Endpoint.LOCAL_ACTIVE:
            link.condition = condition
            link.close()
        self._producers.pop(link, None)

    def _refuse_link(self, link: Link, name: str, description: str) -> None:
        link.condition = Condition(name, description)
        link.open()
        link.close()

    def on_link_remote_close(self, event: Event) -> None:
        self._end_link(link_of(event))

    def on_link_remote_detach(self, event: Event) -> None:
        self._end_link(link_of(event))

    def _end_link(self, link: Link) -> None:
        self._drop_link(link)
        if link.state & Endpoint.LOCAL_ACTIVE:
            link.close()

    def _drop_link(self, link: Link) -> None:
        self._producers.pop(link, None)
        self.consumers.drop(link)

    def on_link_flow(self, event: Event) -> None:
        if event.link is not None:
            self.consumers.flow(event.link)

    # ---- queues --------------------------------------------------------------------------------

    # ---- the group's requests (run in this thread through the mailbox) -------------------------

    def become_master(self, term: int) -> None:
        """Serve clients in `term`; what was held during a transfer attempt is staged now."""
        self._commit.term = term
        self.commit_path.suspended = False
        held, self._held = self._held, []
        for link, delivery, body in held:
            queue = self._producers.get(link)
            if queue is not None:
                self._enqueue(queue, body, delivery)
        settled, self._held_dequeues = self._held_dequeues, []
        for queue_name, seq in settled:
            self._stage_dequeue(queue_name, seq)
        if self._roles.current is not Role.MASTER:
            self._oplog.info(Code.RECOVERY_COMPLETE, "Recovery Complete")
            self._roles.change(Role.MASTER)

    def become_follower(self, role: Role) -> None:
        """Stop serving: clients are disconnected; commits in flight get no outcome."""
        was_master = self._roles.current is Role.MASTER
        self.commit_path.suspended = False
        self._held = []
        self._held_dequeues = []  # the queues are rebuilt from the log below
        # Staged but not committed: in flight, never replicated; it fails with the connections.
        self.commit_path.discard()
        self._roles.change(role)
        # A replica's queues are exactly its log: messages handed out, acknowledged or
        # waiting for replica acks as master all count again as the log says.
        self.replica.rebuild_queues()
        if was_master:
            self._oplog.info(Code.STORE_PASSIVATED, "Store Passivated")
        self.disconnect_clients("not the master")

    def suspend(self) -> int:
        """Transfer master, step 2: take no new work (transfers that arrive are held); commit
        what is staged; return the last transaction the chosen node must hold."""
        self.commit_path.suspended = True
        if self._commit.pending:
            self.commit_path.commit_staged()
        return self._commit.frames.last_txid

    def abort_suspended(self) -> None:
        """Transfer master, step 3: abort held transfers by disconnecting their clients."""
        self._held = []
        self.disconnect_clients("master transfer")

    def _dequeue(self, queue: Queue, message: QueuedMessage) -> None:
        """A consumer settled a message for good: it leaves its queue (a DEQUEUE record).
        While handing over (suspended) the record is held: stored if this node serves on,
        dropped with the rest if it steps down (the message then comes back from the log)."""
        queue.acknowledge(message)
        if self.commit_path.suspended:
            self._held_dequeues.append((queue.name, message.seq))
            return
        self._stage_dequeue(queue.name, message.seq)

    def _stage_dequeue(self, queue_name: str, seq: int) -> None:
        record = Dequeue(self._commit.next_txid, queue_name, seq, self._commit.term)
        self.commit_path.stage(record, None)

    # ---- transfers -----------------------------------------------------------------------------

    def on_delivery(self, event: Event) -> None:
        delivery = event.delivery
        if delivery is None:
            return
        link = delivery.link
        if link.is_receiver:
            self._on_transfer(link, delivery)
        else:
            self.consumers.outcome(link, delivery)

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
        if self.commit_path.suspended:
            self._held.append((link, delivery, body))
            return
        self._enqueue(queue, body, delivery)

    def _enqueue(self, queue: Queue, body: bytes, delivery: Delivery | None) -> None:
        term = self._commit.term
        record = Enqueue(self._commit.next_txid, queue.name, queue.allocate_seq(), body, term)
        durable = not self._active_passive or is_durable(body)
        self.commit_path.stage(record, delivery, durable)
