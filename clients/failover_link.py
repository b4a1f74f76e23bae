"""`FailoverLink`: one AMQP link (sender or receiver) kept open through the failover list."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, cast

from proton import (
    Connection,
    Delivery,
    Event,
    Handler,
    Link,
    Session,
    Terminus,
    Transport,
    symbol,
)
from proton.reactor import Container, LinkOption

from clients.event_loop import Cancellable, call_later, describe
from clients.op_writer import LinkRole
from clients.options import Address, ConnectionOptions
from clients.workload import FailoverPolicy

__all__ = ["FailoverLink", "LinkUser"]


class LinkUser(Protocol):
    """What a worker does with the link `FailoverLink` keeps open."""

    def link_ready(self, link: Link, node: str) -> None:
        """A link is attached on a connection to `node`."""

    def link_flow(self, link: Link) -> None:
        """The link's credit changed."""

    def delivery(self, delivery: Delivery) -> None:
        """A delivery on the link arrived or changed."""

    def link_lost(self, node: str, reason: str) -> None:
        """The ready link to `node` is gone; another attempt follows."""


class _Attempt(Handler):
    """One connection attempt to one target: its events, until it is lost."""

    def __init__(self, owner: FailoverLink, address: Address) -> None:
        self.owner = owner
        self.address = address
        self.alive = True
        self.ready = False
        self.node = address.node  # the broker behind it, once the link is ready
        self.error: str | None = None
        self.connection: Connection | None = None
        self.timer: Cancellable | None = None
        self.flow: Callable[[Link], None] = owner.user.link_flow
        self.deliver: Callable[[Delivery], None] = owner.user.delivery

    def on_link_remote_open(self, event: Event) -> None:
        link = cast(Link, event.link)
        terminus = link.remote_target if link.is_sender else link.remote_source
        if self.alive and not self.ready and terminus.type != Terminus.UNSPECIFIED:
            self.owner._ready(self, link)

    def on_link_flow(self, event: Event) -> None:
        if self.ready and self.alive:
            self.flow(cast(Link, event.link))

    def on_delivery(self, event: Event) -> None:
        if self.ready and self.alive:
            self.deliver(cast(Delivery, event.delivery))

    def on_link_remote_close(self, event: Event) -> None:
        link = cast(Link, event.link)
        self.owner._lost(self, describe(link.remote_condition, "link detached by the broker"))

    def on_session_remote_close(self, event: Event) -> None:
        session = cast(Session, event.session)
        self.owner._lost(self, describe(session.remote_condition, "session ended by the broker"))

    def on_connection_remote_close(self, event: Event) -> None:
        connection = cast(Connection, event.connection)
        reason = describe(connection.remote_condition, "connection closed by the broker")
        self.owner._lost(self, reason, polite=True)

    def on_transport_error(self, event: Event) -> None:
        transport = cast(Transport, event.transport)
        self.error = describe(transport.condition, "transport error")

    def on_transport_closed(self, event: Event) -> None:
        self.owner._lost(self, self.error or "connection closed")

    def on_timer_task(self, event: Event) -> None:
        if not self.ready:
            self.owner._lost(self, "no link within the connect timeout")

    def abandon(self, polite: bool) -> None:
        """Close the connection; unless `polite`, drop the socket without waiting."""
        if self.timer is not None:
            self.timer.cancel()
        conn = self.connection
        if conn is None:
            return
        conn.close()
        transport = conn.transport
        if not polite and transport is not None:
            transport.close_tail()
            transport.close_head()


class _NodeProperties(LinkOption):
    """Node properties on a sender's target (the terminus' dynamic-node-properties)."""

    def __init__(self, properties: dict[str, str]) -> None:
        self._properties = {symbol(k): v for k, v in properties.items()}

    def apply(self, link: Link) -> None:
        link.target.properties.put_dict(self._properties)


class FailoverLink:
    """Keeps one link to `options.queue` open through the failover list: a connection that is
    refused, closed (e.g. `amqp:connection:forced` by a node that is not the master), times out
    or loses its link makes it try the next URL, as `FailoverPolicy` says."""

    def __init__(
        self,
        container: Container,
        options: ConnectionOptions,
        role: LinkRole,
        user: LinkUser,
        log: Callable[[str], None],
        policy: FailoverPolicy | None = None,
        node_properties: dict[str, str] | None = None,
    ) -> None:
        self.user = user
        self._container = container
        self._options = options
        self._role = role
        self._log = log
        self._policy = policy or FailoverPolicy(len(options.addresses))
        # Node properties of a sender's target: what the queue is declared with (qpid.replicate).
        self._node_properties = dict(node_properties or {})
        self._current: _Attempt | None = None
        self._closing: Callable[[], None] | None = None
        self._connect_timeout_s = options.heartbeat_s if options.heartbeat_s > 0 else 5.0
        self._attempts = 0

    def start(self) -> None:
        self._connect(self._policy.index)

    def close(self, done: Callable[[], None], grace_s: float = 1.0) -> None:
        """Close the connection, waiting up to `grace_s` for the broker to close its end
        (so that settlements sent before reach it), then call `done` once."""
        if self._closing is not None:
            return
        self._closing = done
        current = self._current
        if current is None or not current.ready:
            if current is not None:
                current.alive = False
                current.abandon(polite=False)
            self._finish_close()
            return
        current.abandon(polite=True)
        call_later(self._container, grace_s, self._finish_close)

    def renew(self, reason: str) -> None:
        """Give up the ready link (the broker stopped answering on it) and attach a new one
        on the same URL at once; the user hears `link_lost`, then `link_ready`."""
        current = self._current
        if current is None or not current.ready or self._closing is not None:
            return
        current.alive = False
        current.abandon(polite=True)
        self._current = None
        self._log(f"renewing the link on {current.node}: {reason}")
        self.user.link_lost(current.node, reason)
        self._connect(self._policy.index)

    def _finish_close(self) -> None:
        done = self._closing
        if done is not None:
            self._closing = lambda: None
            done()

    def _connect(self, index: int) -> None:
        if self._closing is not None:
            return
        address = self._options.addresses[index]
        attempt = _Attempt(self, address)
        self._current = attempt
        heartbeat = self._options.heartbeat_s or None
        conn = self._container.connect(
            url=address.url, handler=attempt, reconnect=False, heartbeat=heartbeat
        )
        attempt.connection = conn
        # A name of its own per attempt: a broker that keeps an abandoned attempt's link
        # (AMQP 1.0 links are identified by container and name) would otherwise have to take
        # it over first, and Broker-J can take longer than the connect timeout to do that.
        self._attempts += 1
        name = f"{self._options.process}-{self._role}-{self._attempts}"
        if self._role == "sender":
            options = _NodeProperties(self._node_properties) if self._node_properties else None
            self._container.create_sender(
                conn, target=self._options.queue, name=name, options=options
            )
        else:
            self._container.create_receiver(conn, source=self._options.queue, name=name)
        attempt.timer = self._container.schedule(self._connect_timeout_s, attempt)

    def _ready(self, attempt: _Attempt, link: Link) -> None:
        attempt.ready = True
        if attempt.timer is not None:
            attempt.timer.cancel()
        self._policy.connected()
        remote = attempt.connection.remote_container if attempt.connection else None
        if self._options.node_from_broker and remote:
            attempt.node = str(remote)
        self._log(f"link ready on {attempt.node} ({attempt.address.url})")
        self.user.link_ready(link, attempt.node)

    def _lost(self, attempt: _Attempt, reason: str, polite: bool = False) -> None:
        if not attempt.alive:
            return
        attempt.alive = False
        attempt.abandon(polite)
        if self._current is attempt:
            self._current = None
        if self._closing is not None:
            self._finish_close()
            return
        node = attempt.node
        if attempt.ready:
            self._log(f"lost the link on {node}: {reason}")
            self.user.link_lost(node, reason)
        else:
            self._log(f"no link on {node}: {reason}")
        index, delay = self._policy.next()
        if delay == 0:
            self._connect(index)
        else:
            call_later(self._container, delay, lambda: self._connect(index))
