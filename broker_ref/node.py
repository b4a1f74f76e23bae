"""One broker_ref node: its store, queues, group membership, AMQP server and management API.

    node = Node(config, oplog)
    node.open()     # take the ports and the data directory; raises BrokerError
    node.serve()    # recover, join the group, serve while MASTER, until SIGTERM/SIGINT

`open` fails before anything is logged, so a port clash or a locked data
directory is one line on stderr and exit status 2. A node without peers is a
group of one and becomes MASTER at once.

Threads: the reactor (AMQP, the store, the queues), the group (replication and
elections, group.py) and the management API. The group's decisions reach the
reactor through the mailbox; the management thread only reads, and hands
attribute changes to the group thread.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from proton import Delivery
from proton.reactor import Container

from broker_ref.amqp_server import AmqpServer
from broker_ref.commit import GroupCommit
from broker_ref.config import NodeConfig
from broker_ref.connection_guard import ConnectionLimits
from broker_ref.errors import StartupError, StoreCorrupt
from broker_ref.feeds import replication_filter
from broker_ref.frame_log import FrameLog
from broker_ref.group import Group
from broker_ref.log_store import LogStore, Recovery
from broker_ref.mailbox import Mailbox
from broker_ref.management import ManagementServer
from broker_ref.node_view import NodeManagementView
from broker_ref.oplog import Code, OperationalLog
from broker_ref.proton_guard import install as install_proton_guard
from broker_ref.queues import QueueBook
from broker_ref.roles import Role, RoleTracker
from broker_ref.shutdown import ShutdownSignal
from broker_ref.tls import management_context

if TYPE_CHECKING:
    from proton._reactor import Acceptor

__all__ = ["Node"]


class _ReactorSide:
    """The group's requests, posted to the reactor thread (group.StoreSide)."""

    def __init__(self, mailbox: Mailbox, server: AmqpServer, oplog: OperationalLog) -> None:
        self._mailbox = mailbox
        self._server = server
        self._oplog = oplog

    def become_master(self, term: int) -> None:
        self._mailbox.post(lambda: self._server.become_master(term))

    def become_follower(self, role: Role, reason: str) -> None:
        self._mailbox.post(lambda: self._server.become_follower(role))

    def apply(self, frames: list[bytes], done: Callable[[int], None]) -> None:
        self._mailbox.post(lambda: done(self._server.replica.apply(frames)))

    def rollback(
        self, keep_through: int, restore: bool, master: str, done: Callable[[], None]
    ) -> None:
        def run() -> None:
            dropped = self._server.replica.rollback(keep_through)
            if restore:
                self._oplog.info(
                    Code.NETWORK_RESTORE,
                    f"Network restore : discarded {dropped} transactions : receiving a full"
                    f" copy from '{master}'",
                )
            elif dropped:
                self._oplog.warn(Code.TRANSACTIONS_DISCARDED, "Diverged transactions discarded")
                self._oplog.warn(
                    Code.ROLLED_BACK,
                    f"Rolled back {dropped} transactions after txid {keep_through}"
                    f" to rejoin master '{master}'",
                )
            done()

        self._mailbox.post(run)

    def acked_through(self, txid: int) -> None:
        self._mailbox.post(lambda: self._server.commit_path.acked_through(txid))

    def suspend(self, done: Callable[[int], None]) -> None:
        self._mailbox.post(lambda: done(self._server.suspend()))

    def abort_suspended(self) -> None:
        self._mailbox.post(self._server.abort_suspended)


class Node:
    def __init__(self, config: NodeConfig, oplog: OperationalLog) -> None:
        install_proton_guard()
        self.config = config
        self._oplog = oplog
        self._roles = RoleTracker(config.name, oplog)
        self._queues = QueueBook()
        self._frames = FrameLog()
        self._shutdown = ShutdownSignal()
        self._mailbox = Mailbox()
        self._container = Container(container_id=config.name)
        self._management: ManagementServer | None = None
        self._acceptor: Acceptor | None = None
        self._replication: socket.socket | None = None
        self._store: LogStore | None = None
        self._recovery: Recovery | None = None
        self._group: Group | None = None
        self._fatal: str | None = None
        self.view = NodeManagementView(
            config, self._roles, self._frames, self._queues, self._mailbox
        )

    # ---- lifecycle -----------------------------------------------------------------------------

    def open(self) -> None:
        """Take the management, AMQP and replication ports and the data directory, or raise."""
        config = self.config
        self._shutdown.install()
        try:
            try:
                self._management = ManagementServer(
                    config.host,
                    config.management_port,
                    self.view,
                    oplog=self._oplog,
                    tls=management_context(config),
                )
            except OSError as exc:
                raise StartupError(
                    f"cannot listen on {config.host}:{config.management_port} (management):"
                    f" {exc.strerror or exc}"
                ) from exc
            try:
                self._acceptor = self._container.acceptor(config.host, str(config.amqp_port))
            except OSError as exc:
                raise StartupError(
                    f"cannot listen on {config.host}:{config.amqp_port} (amqp):"
                    f" {exc.strerror or exc}"
                ) from exc
            if config.replication_port is not None:
                try:
                    self._replication = socket.create_server((config.host, config.replication_port))
                except OSError as exc:
                    raise StartupError(
                        f"cannot listen on {config.host}:{config.replication_port}"
                        f" (replication): {exc.strerror or exc}"
                    ) from exc
            try:
                self._store, self._recovery = LogStore.open(config.data_dir)
            except StoreCorrupt as exc:
                self._oplog.error(
                    Code.STORE_CORRUPT,
                    f"Store corrupt : {exc.path} : offset {exc.offset} : {exc.reason} : "
                    f"valid records follow at offset {exc.resumes_at}",
                )
                raise
        except BaseException:
            self._release()
            raise

    def serve(self) -> None:
        """Recover, join the group, serve until asked to stop, then close cleanly."""
        assert self._management and self._acceptor and self._store and self._recovery
        config = self.config
        self._management.start()
        try:
            self._recover(self._store, self._recovery)
            commit = GroupCommit[Delivery](
                self._store, config.coalescing_sync, self._frames, config.durability.master_sync
            )
            server = AmqpServer(
                container=self._container,
                acceptor=self._acceptor,
                node=config.name,
                idle_timeout_s=config.idle_timeout_s,
                queues=self._queues,
                commit=commit,
                roles=self._roles,
                oplog=self._oplog,
                shutdown_requested=lambda: self._shutdown.requested,
                replica_sync=config.durability.replica_sync,
                insufficient_replicas_timeout_s=config.insufficient_replicas_timeout_s,
                active_passive=config.active_passive,
                limits=ConnectionLimits(config.max_connections, config.handshake_timeout_s),
            )
            group = Group(
                config,
                self._oplog,
                self._frames,
                _ReactorSide(self._mailbox, server, self._oplog),
                replication_socket=self._replication,
            )
            group.on_fatal = self._fail
            server.commit_path.acks_needed = group.acks_needed
            server.commit_path.on_committed = lambda: group.call(group.records_committed)
            if config.active_passive:
                group.feeds.frame_filter = replication_filter(
                    self._queues.level_of, config.ha_replicate
                )
                self.view.set_replication = server.declarations.set_replication
                self.view.consumed_first = lambda: server.commit_path.consumed_first
            self._group = group
            self.view.group = group
            self._container.handler.add(server)
            self._container.selectable(handler=cast(Any, self._shutdown))
            self._container.selectable(handler=cast(Any, self._mailbox))
            server.start_timers()
            self._oplog.info(
                Code.BROKER_STARTING, f"Starting : Listening on TCP port {config.amqp_port}"
            )
            self._oplog.info(Code.BROKER_READY, "Qpid Broker Ready")
            group.start()
            self._container.run()
            group.stop()
            self._group = self.view.group = None
            if self._fatal is not None:
                raise StartupError(self._fatal)
            store, self._store = self._store, None
            store.close()
            self._oplog.info(Code.STORE_CLOSED, "Closed")
            self._oplog.info(Code.BROKER_STOPPED, "Stopped")
        finally:
            if self._group is not None:
                self._group.stop()
            self._release()

    def _fail(self, why: str) -> None:
        """Stop the node for a reason it cannot run with (from any thread)."""
        self._fatal = why
        self._oplog.error(Code.BROKER_STOPPED, f"Stopped : {why}")
        self._mailbox.post(self._container.stop)

    def _recover(self, store: LogStore, recovery: Recovery) -> None:
        self._oplog.info(Code.STORE_CREATED, "Created")
        self._oplog.info(Code.STORE_LOCATION, f"Store location : {store.path.parent}")
        self._oplog.info(Code.RECOVERY_START, "Recovery Start")
        torn = recovery.torn_tail
        if torn is not None:
            self._oplog.warn(
                Code.LOG_TAIL_TRUNCATED,
                f"Log tail truncated : {torn.dropped_bytes} bytes at offset {torn.offset}"
                f" : {torn.reason}",
            )
        self._frames.restore(recovery)
        self._queues.replace(QueueBook.recover(recovery.iter_records()))
        self._recovery = None
        self._oplog.info(
            Code.RECOVERED_MESSAGES, f"Recovered {self._queues.message_count} messages"
        )

    def _release(self) -> None:
        if self._management is not None:
            self._management.stop()
            self._management = None
        if self._acceptor is not None:
            self._acceptor.close()
            self._acceptor = None
        if self._replication is not None:
            self._replication.close()
            self._replication = None
        if self._store is not None:
            store, self._store = self._store, None
            store.close()
        self._frames.close()
        self._shutdown.release()
        self._mailbox.release()
