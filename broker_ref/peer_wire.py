"""The wire format between the nodes of a group: a JSON header and an optional binary payload.

    frame = header_len:u32 payload_len:u32 header(JSON, UTF-8) payload

The first frame on a connection is the dialling node's `hello` (group, node);
after it, every frame carries a `type` and the sender's `term`.
"""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

__all__ = ["MAX_FRAME", "encode_message", "read_message", "write_message"]

_HEAD = struct.Struct(">II")
MAX_FRAME = 64 * 1024 * 1024


def encode_message(header: dict[str, Any], payload: bytes = b"") -> bytes:
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return _HEAD.pack(len(head), len(payload)) + head + payload


def write_message(
    writer: asyncio.StreamWriter, header: dict[str, Any], payload: bytes = b""
) -> None:
    writer.write(encode_message(header, payload))


async def read_message(
    reader: asyncio.StreamReader, limit: int = MAX_FRAME
) -> tuple[dict[str, Any], bytes]:
    """The next message; raises IncompleteReadError at the end of the stream, ValueError on junk
    (a frame larger than `limit`, a header that is not a JSON object)."""
    head = await reader.readexactly(_HEAD.size)
    head_len, payload_len = _HEAD.unpack(head)
    if head_len > limit or payload_len > limit:
        raise ValueError(f"frame too large ({head_len} + {payload_len} bytes, limit {limit})")
    try:
        header = json.loads(await reader.readexactly(head_len))
    except RecursionError:
        raise ValueError("header nested too deeply") from None
    if not isinstance(header, dict):
        raise ValueError("header is not an object")
    payload = await reader.readexactly(payload_len) if payload_len else b""
    return header, payload
