"""Draining a queue over AMQP 0-9-1 with `basic.get`, for a broker whose AMQP 1.0 link drain
cannot be relied on (RabbitMQ 3.10: a drain that ends with credit left crashes the channel of a
classic queue, so it is never confirmed). pika, imported here only.

Each message got is recorded as `receive ok` (its AMQP message id; `redelivered` as the broker
says) before it is acknowledged; a `get-empty` confirms the queue empty: `drain ok`. A lost
connection moves on to the next address of the failover list (what was got and not yet
acknowledged is redelivered, and recorded again: a duplicate, never a loss); not confirmed
within the deadline: `drain info` with the reason.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from clients.op_writer import OpWriter
from clients.options import Address

__all__ = ["drain_by_get", "queue_name"]

RETRY_S = 0.5


def queue_name(address: str) -> str:
    """The queue's name in an AMQP 1.0 address (`/amq/queue/lab` → `lab`)."""
    return address.rstrip("/").rpartition("/")[2] or address


def _connection(url: str, user: str, password: str, timeout_s: float):  # type: ignore[no-untyped-def]
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
    """Get every message of `queue` until it is empty (module note); the drain's `invoke`
    has been written by the caller."""
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
            while clock() < deadline:
                method, properties, _body = channel.basic_get(name, auto_ack=False)
                if method is None:
                    writer.write("ok", "drain", None, node=node)
                    return
                value = properties.message_id
                writer.write(
                    "ok",
                    "receive",
                    value.decode("utf-8", "replace") if isinstance(value, bytes) else value,
                    node=node,
                    redelivered=bool(method.redelivered),
                )
                channel.basic_ack(method.delivery_tag)
        except (pika.exceptions.AMQPError, OSError) as exc:
            last_error = f"{address.node}: {exc!r}"
            log(f"drain by get: lost {address.node}: {exc!r}")
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
