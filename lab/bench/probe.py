"""A tiny synchronous AMQP client for the lab itself (readiness, benchmarks, tests)."""

from __future__ import annotations

import uuid

from proton import Message
from proton.utils import BlockingConnection

__all__ = ["send_one"]


def send_one(url: str, queue: str = "lab", timeout_s: float = 10.0) -> str:
    """Send one durable message and wait until the broker accepts it; return its id."""
    message_id = f"probe-{uuid.uuid4().hex[:12]}"
    conn = BlockingConnection(url, timeout=timeout_s)
    try:
        sender = conn.create_sender(queue)
        sender.send(Message(id=message_id, body=b"x" * 100, durable=True), timeout=timeout_s)
    finally:
        conn.close()
    return message_id
