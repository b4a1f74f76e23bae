"""The one place the broker looks inside a message: marking a redelivery.

Messages are stored and sent as the exact bytes the producer sent. Only a
message that goes out again after an unsettled delivery is decoded, to add one
to its header's delivery-count, as AMQP 1.0 asks of a redelivery.
"""

from __future__ import annotations

from proton import Message

__all__ = ["delivery_count", "mark_redelivered"]


def mark_redelivered(body: bytes) -> bytes:
    """`body` re-encoded with its header's delivery-count one higher.

    Bytes that do not decode as a message (a client may send anything) come back unchanged.
    """
    message = Message()
    try:
        message.decode(body)
    except Exception:
        return body
    message.delivery_count = message.delivery_count + 1
    return bytes(message.encode())


def delivery_count(body: bytes) -> int:
    """The delivery-count in the header of the encoded message `body`."""
    message = Message()
    message.decode(body)
    return int(message.delivery_count)
