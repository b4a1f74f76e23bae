"""The durable changes a node makes, and their binary framing on disk.

Each record carries a transaction id: a number that rises by one with every
durable change, like BDB JE's VLSN. The HA step ships these same frames to
replicas, and elections compare the highest id each node holds.

Each record also carries the term (election epoch) of the master that wrote it:
(txid, term) names one transaction across the whole group, which is how a
rejoining node finds where its history diverged from the master's.

A frame is `length:u32 crc32:u32 payload`, big-endian, where the CRC covers
the payload and the payload is `kind:u8 txid:u64 term:u32 name_len:u16 name` followed by
`seq:u64` for ENQUEUE and DEQUEUE, and then, for ENQUEUE only, the encoded
AMQP message to the end of the payload. A DECLARE may end with one byte, the queue's
replication level (1 none, 2 configuration, 3 all; absent: the broker's default). A SKIP
holds a transaction's place and nothing else (no queue name): what an active-passive
primary does not replicate to a backup, and a non-durable message on disk.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from broker_ref.errors import StoreError

__all__ = [
    "FRAME_HEADER_SIZE",
    "MAX_PAYLOAD_SIZE",
    "Declare",
    "Dequeue",
    "Enqueue",
    "Record",
    "Skip",
    "decode_payload",
    "encode_frame",
    "peek_frame",
    "read_frame_header",
    "skip_frame",
]


@dataclass(frozen=True, slots=True)
class Declare:
    """A durable queue was declared (again, when its replication level changes)."""

    txid: int
    queue: str
    term: int = 0
    replicate: str | None = None  # none / configuration / all; None: the broker's default


@dataclass(frozen=True, slots=True)
class Enqueue:
    """A message was put on a queue; `body` is the message exactly as the producer sent it."""

    txid: int
    queue: str
    seq: int
    body: bytes
    term: int = 0


@dataclass(frozen=True, slots=True)
class Dequeue:
    """A message left a queue: a consumer accepted or rejected it."""

    txid: int
    queue: str
    seq: int
    term: int = 0


@dataclass(frozen=True, slots=True)
class Skip:
    """A transaction's place without its change (not replicated, or not durable)."""

    txid: int
    term: int = 0
    queue: str = ""


Record = Declare | Enqueue | Dequeue | Skip

FRAME_HEADER_SIZE = 8
MAX_PAYLOAD_SIZE = 64 * 1024 * 1024

KIND_DECLARE, KIND_ENQUEUE, KIND_DEQUEUE, KIND_SKIP = 1, 2, 3, 4
_DECLARE, _ENQUEUE, _DEQUEUE, _SKIP = KIND_DECLARE, KIND_ENQUEUE, KIND_DEQUEUE, KIND_SKIP
LEVELS = ("none", "configuration", "all")
_FRAME_HEADER = struct.Struct(">II")
_RECORD_HEADER = struct.Struct(">BQIH")
_SEQ = struct.Struct(">Q")


def encode_frame(record: Record) -> bytes:
    """The bytes that go on disk (and on the replication stream) for `record`."""
    name = record.queue.encode("utf-8")
    if isinstance(record, Enqueue):
        payload = b"".join(
            (
                _RECORD_HEADER.pack(_ENQUEUE, record.txid, record.term, len(name)),
                name,
                _SEQ.pack(record.seq),
                record.body,
            )
        )
    elif isinstance(record, Dequeue):
        payload = _RECORD_HEADER.pack(_DEQUEUE, record.txid, record.term, len(name)) + name
        payload += _SEQ.pack(record.seq)
    elif isinstance(record, Skip):
        payload = _RECORD_HEADER.pack(_SKIP, record.txid, record.term, 0)
    else:
        payload = _RECORD_HEADER.pack(_DECLARE, record.txid, record.term, len(name)) + name
        if record.replicate is not None:
            payload += bytes((LEVELS.index(record.replicate) + 1,))
    if len(payload) > MAX_PAYLOAD_SIZE:
        raise StoreError(f"record of {len(payload)} bytes is larger than {MAX_PAYLOAD_SIZE}")
    return _FRAME_HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def peek_frame(frame: bytes) -> tuple[int, int, int, str]:
    """(kind, txid, term, queue name) of an encoded frame, without decoding the rest."""
    kind, txid, term, name_len = _RECORD_HEADER.unpack_from(frame, FRAME_HEADER_SIZE)
    start = FRAME_HEADER_SIZE + _RECORD_HEADER.size
    return int(kind), int(txid), int(term), frame[start : start + name_len].decode("utf-8")


def skip_frame(txid: int, term: int) -> bytes:
    """A SKIP holding the place of transaction `txid`."""
    return encode_frame(Skip(txid, term))


def read_frame_header(data: bytes | memoryview, offset: int) -> tuple[int, int]:
    """The (payload length, CRC32) of the frame starting at `offset`."""
    length, crc = _FRAME_HEADER.unpack_from(data, offset)
    return int(length), int(crc)


def decode_payload(payload: bytes | memoryview) -> Record:
    """The record in a payload whose CRC already checked; raise ValueError if malformed."""
    try:
        kind, txid, term, name_len = _RECORD_HEADER.unpack_from(payload, 0)
        start = _RECORD_HEADER.size
        name = bytes(payload[start : start + name_len]).decode("utf-8")
        if len(name.encode("utf-8")) != name_len:
            raise ValueError("queue name cut short")
        rest = start + name_len
        if kind == _DECLARE:
            if rest == len(payload):
                return Declare(txid, name, term)
            if rest + 1 != len(payload) or not 1 <= payload[rest] <= len(LEVELS):
                raise ValueError("trailing bytes after DECLARE")
            return Declare(txid, name, term, LEVELS[payload[rest] - 1])
        if kind == _SKIP:
            if rest != len(payload) or name_len:
                raise ValueError("bytes in a SKIP")
            return Skip(txid, term)
        (seq,) = _SEQ.unpack_from(payload, rest)
        if kind == _ENQUEUE:
            return Enqueue(txid, name, seq, bytes(payload[rest + _SEQ.size :]), term)
        if kind == _DEQUEUE:
            if rest + _SEQ.size != len(payload):
                raise ValueError("trailing bytes after DEQUEUE")
            return Dequeue(txid, name, seq, term)
    except (struct.error, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from exc
    raise ValueError(f"unknown record kind {kind}")
