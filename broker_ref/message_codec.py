"""The one place the broker looks inside a message: marking a redelivery, and whether it
is durable.

Messages are stored and sent as the exact bytes the producer sent. Only a
message that goes out again after an unsettled delivery is decoded, to add one
to its header's delivery-count, as AMQP 1.0 asks of a redelivery. An active-passive
broker keeps non-durable messages off its disk: `is_durable` reads the header's first
field without decoding the message.
"""

from __future__ import annotations

from proton import Message

__all__ = ["delivery_count", "is_durable", "mark_redelivered"]

_HEADER = b"\x00\x53\x70"  # the header section's descriptor (smallulong 0x70)
_LIST0, _LIST8, _LIST32 = 0x45, 0xC0, 0xD0
_TRUE, _BOOLEAN = 0x41, 0x56


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


def is_durable(body: bytes) -> bool:
    """Whether the encoded message `body` says it is durable: a header section first whose
    first field is true. No header, or no such field, means not durable (AMQP's default)."""
    if not body.startswith(_HEADER) or len(body) < 4:
        return False
    code = body[3]
    if code == _LIST8 and len(body) >= 7 and body[5] >= 1:
        field = body[6:8]
    elif code == _LIST32 and len(body) >= 13 and int.from_bytes(body[8:12], "big") >= 1:
        field = body[12:14]
    else:  # list0, or not a list
        return False
    return field[:1] == bytes((_TRUE,)) or field == bytes((_BOOLEAN, 1))
