"""Draining a queue over AMQP 0-9-1, for a broker whose AMQP 1.0 link drain cannot be relied
on (RabbitMQ 3.10: a drain that ends with credit left crashes the channel of a classic queue,
so it is never confirmed). pika, imported here only.

The queue is consumed (`basic.consume`, PREFETCH messages in flight); each message is recorded
as `receive ok` (its AMQP message id; `redelivered` as the broker says) before it is
acknowledged. Once nothing has come for QUIET_S, `basic.get`s ask the broker until it answers
`get-empty` (each message recorded like the others); a first `get-empty` cancels the consumer
(it consumes on when something was still in flight to it), and the channel is closed, so that
what the broker had given the consumer and never delivered goes back to the queue; gets on a
fresh channel then answer `get-empty` (`drain ok`) or give what was left. A lost connection
moves on to the next address of the failover list (what was delivered and not yet acknowledged
is redelivered, and recorded again: a duplicate, never a loss); not confirmed within the
deadline: `drain info` with the reason.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from clients.op_writer import OpWriter
from clients.options import Address

__all__ = ["drain_by_get", "queue_name"]

RETRY_S = 0.5
PREFETCH = 500
QUIET_S = 0.5


def queue_name(address: str) -> str:
    """The queue's name in an AMQP 1.0 address (`/amq/queue/lab` → `lab`)."""
    return address.rstrip("/").rpartition("/")[2] or address


def _connection(url: str, user: str, password: str, timeout_s: float) -> Any:
    import pika

    parts = urlsplit(url)
    params = pika.ConnectionParameters(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5672,
        credentials=pika.PlainCredentials(user, password),
        socket_timeout=timeout_s,
        blocked_connection_timeout=timeout_s,
        connection_attempts=1,
        heartbeat=0,
    )
    return pika.BlockingConnection(params)


def _record(writer: OpWriter, node: str | None, method: Any, properties: Any) -> None:
    value = getattr(properties, "message_id", None)
    writer.write(
        "ok",
        "receive",
        value.decode("utf-8", "replace") if isinstance(value, bytes) else value,
        node=node,
        redelivered=bool(getattr(method, "redelivered", False)),
    )


@dataclass(frozen=True)
class _Drain:
    """What one drain reads with: the queue's name, its deadline on `clock`, and how a
    message is recorded (before it is acknowledged)."""

    name: str
    deadline: float
    clock: Callable[[], float]
    record: Callable[[Any, Any], None]

    @property
    def in_time(self) -> bool:
        return self.clock() < self.deadline


def _emptied(channel: Any, drain: _Drain) -> bool:
    """Consume until gets find the queue empty with nothing in flight (True), or the deadline
    (False); every message recorded, then acknowledged."""
    while drain.in_time:
        for method, properties, _body in channel.consume(drain.name, inactivity_timeout=QUIET_S):
            if method is not None:
                drain.record(method, properties)
                channel.basic_ack(method.delivery_tag)
                continue
            if not drain.in_time:
                break
            got, _ = _get_until_empty(channel, drain)
            if got:
                continue
            if channel.cancel() == 0:  # nothing was in flight to the consumer
                return True
            break  # what was in flight went back to the queue: consume again
    channel.cancel()
    return False


def _get_until_empty(channel: Any, drain: _Drain) -> tuple[int, bool]:
    """Get until the queue answers empty (or the deadline), each message recorded, then
    acknowledged: how many came, and whether the queue answered empty. One get per quiet
    would drain a queue whose consumer is given nothing at two messages a second: a quorum
    queue member whose log could not be written (a full disk) still answers gets, and its
    consumers get nothing."""
    got = 0
    while drain.in_time:
        method, properties, _ = channel.basic_get(drain.name, auto_ack=False)
        if method is None:
            return got, True
        drain.record(method, properties)
        channel.basic_ack(method.delivery_tag)
        got += 1
    return got, False


def _confirmed_empty(connection: Any, channel: Any, drain: _Drain) -> bool:
    """Whether the queue is empty once `channel` is closed: what the broker had given its
    consumer and no client ever received (a member that takes messages for a consumer and
    delivers none of them) goes back to the queue only then, so gets on a channel with no
    consumer have the last word."""
    channel.close()
    return _get_until_empty(connection.channel(), drain)[1]


def drain_by_get(
    addresses: tuple[Address, ...],
    queue: str,
    user: str,
    password: str,
    timeout_s: float,
    writer: OpWriter,
    log: Callable[[str], None],
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Drain `queue` over AMQP 0-9-1 (module note); the drain's `invoke` has been written by
    the caller."""
    import pika.exceptions

    deadline = clock() + timeout_s
    name = queue_name(queue)
    turn = 0
    node: str | None = None
    last_error = "no address answered"
    while clock() < deadline:
        address = addresses[turn % len(addresses)]
        turn += 1
        node = address.node
        try:
            connection = _connection(address.url, user, password, max(1.0, deadline - clock()))
        except (pika.exceptions.AMQPError, OSError) as exc:
            last_error = f"{address.node}: {exc!r}"
            time.sleep(RETRY_S)
            continue
        try:
            channel = connection.channel()
            channel.basic_qos(prefetch_count=PREFETCH)
            drain = _Drain(name, deadline, clock, functools.partial(_record, writer, node))
            if _emptied(channel, drain) and _confirmed_empty(connection, channel, drain):
                writer.write("ok", "drain", None, node=node)
                return
        except (pika.exceptions.AMQPError, OSError) as exc:
            last_error = f"{address.node}: {exc!r}"
            log(f"drain over AMQP 0-9-1: lost {address.node}: {exc!r}")
            time.sleep(RETRY_S)
        finally:
            with contextlib.suppress(pika.exceptions.AMQPError, OSError):
                connection.close()
    writer.write(
        "info",
        "drain",
        None,
        node=node,
        error=f"queue not confirmed empty within {timeout_s:g} s (last: {last_error})",
    )
