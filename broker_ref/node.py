"""One broker_ref node: its store, queues, role, AMQP server and management API, composed.

    node = Node(config, oplog)
    node.open()     # take both ports and the data directory; raises BrokerError
    node.serve()    # recover, become MASTER, serve AMQP until SIGTERM/SIGINT, close

`open` fails before anything is logged, so a port clash or a locked data
directory is one line on stderr and exit status 2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from proton import Delivery
from proton.reactor import Container

from broker_ref.amqp_server import AmqpServer
from broker_ref.commit import GroupCommit
from broker_ref.config import NodeConfig
from broker_ref.errors import StartupError
from broker_ref.log_store import LogStore, Recovery
from broker_ref.management import ManagementServer
from broker_ref.oplog import Code, OperationalLog
from broker_ref.queues import QueueBook
from broker_ref.roles import Role, RoleTracker
from broker_ref.shutdown import ShutdownSignal

if TYPE_CHECKING:
    from proton._reactor import Acceptor

__all__ = ["Node"]


class Node:
    """A standalone node; the HA step adds its group membership and elections here."""

    def __init__(self, config: NodeConfig, oplog: OperationalLog) -> None:
        self.config = config
        self._oplog = oplog
        self._roles = RoleTracker(config.name, oplog)
        self._queues = QueueBook()
        self._shutdown = ShutdownSignal()
        self._container = Container(container_id=config.name)
        self._management: ManagementServer | None = None
        self._acceptor: Acceptor | None = None
        self._store: LogStore | None = None
        self._recovery: Recovery | None = None

    # ---- NodeView, read by the management thread ---------------------------------------------

    @property
    def name(self) -> str:
        return self.config.name

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "name": self.config.name, "role": self._roles.current.value}

    def virtualhostnode(self) -> dict[str, Any]:
        store = self._store
        queues = self._queues.stats()
        return {
            "name": self.config.name,
            "groupName": self.config.group,
            "role": self._roles.current.value,
            "lastKnownReplicationTransactionId": store.durable_txid if store else 0,
            "queues": {
                name: {"depth": stats.depth, "unacked": stats.unacked}
                for name, stats in sorted(queues.items())
            },
        }

    # ---- lifecycle -----------------------------------------------------------------------------

    def open(self) -> None:
        """Take the management port, the AMQP port and the data directory, or raise."""
        config = self.config
        self._shutdown.install()
        try:
            try:
                self._management = ManagementServer(config.host, config.management_port, self)
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
            self._store, self._recovery = LogStore.open(config.data_dir)
        except BaseException:
            self._release()
            raise

    def serve(self) -> None:
        """Recover, serve as MASTER until asked to stop, then close cleanly."""
        assert self._management and self._acceptor and self._store and self._recovery
        self._management.start()
        try:
            self._recover(self._store, self._recovery)
            self._roles.change(Role.MASTER)
            server = AmqpServer(
                container=self._container,
                acceptor=self._acceptor,
                node=self.config.name,
                idle_timeout_s=self.config.idle_timeout_s,
                queues=self._queues,
                commit=GroupCommit[Delivery](self._store, self.config.coalescing_sync),
                roles=self._roles,
                oplog=self._oplog,
                shutdown_requested=lambda: self._shutdown.requested,
            )
            self._container.handler.add(server)
            self._container.selectable(handler=cast(Any, self._shutdown))
            self._oplog.info(
                Code.BROKER_STARTING, f"Starting : Listening on TCP port {self.config.amqp_port}"
            )
            self._oplog.info(Code.BROKER_READY, "Qpid Broker Ready")
            self._container.run()
            store, self._store = self._store, None
            store.close()
            self._oplog.info(Code.STORE_CLOSED, "Closed")
            self._oplog.info(Code.BROKER_STOPPED, "Stopped")
        finally:
            self._release()

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
        self._queues = QueueBook.recover(recovery.records)
        self._recovery = None
        self._oplog.info(
            Code.RECOVERED_MESSAGES, f"Recovered {self._queues.message_count} messages"
        )
        self._oplog.info(Code.RECOVERY_COMPLETE, "Recovery Complete")

    def _release(self) -> None:
        if self._management is not None:
            self._management.stop()
            self._management = None
        if self._acceptor is not None:
            self._acceptor.close()
            self._acceptor = None
        if self._store is not None:
            store, self._store = self._store, None
            store.close()
        self._shutdown.release()
