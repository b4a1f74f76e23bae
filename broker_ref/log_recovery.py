"""Reading a node's log back when it opens: every complete record, a torn tail cut off, damage
refused.

A torn tail (a crash mid-write, zeros or garbage after the last frame, a last frame that
fails its CRC) is cut off at the end of the last complete frame, which is never lost. A
bad frame with valid frames after it is not a torn write but damage: recovery raises
StoreCorrupt (naming the file and the offset) instead of dropping what follows, as etcd's
WAL does. The log is read a few megabytes at a time, never whole.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from broker_ref.errors import StoreCorrupt, StoreError
from broker_ref.frame_index import FrameIndex, iter_frames
from broker_ref.records import (
    FRAME_HEADER_SIZE,
    MAX_PAYLOAD_SIZE,
    Record,
    decode_payload,
    read_frame_header,
)

__all__ = ["MAGIC", "Recovery", "TornTail", "create_log", "fsync_dir", "pread", "recover"]

MAGIC = b"BRLOG\x00\x02\n"
_CHUNK = 4 << 20  # bytes read at a time while recovering


@dataclass(frozen=True)
class TornTail:
    """The part of the log that recovery cut off: where, how much, and why."""

    offset: int
    dropped_bytes: int
    reason: str


@dataclass(frozen=True)
class Recovery:
    """What `LogStore.open` read back: where each complete record is (a sparse index), the
    runs of consecutive txids and the terms' boundaries, and the tail it dropped.

    The records stay in the file: `iter_records` and `read` read it a few megabytes at a
    time, so a node restarted on a long log rebuilds its queues and its frame log without
    holding the log in memory. Read them before the store appends or truncates.
    """

    torn_tail: TornTail | None
    path: Path | None = None
    index: FrameIndex = field(default_factory=lambda: FrameIndex(len(MAGIC)))
    runs: tuple[tuple[int, int], ...] = ()  # (first txid, its record's place), in order
    boundaries: tuple[tuple[int, int], ...] = ()  # (term, its first record's txid)

    @property
    def size(self) -> int:
        """The log's size once the torn tail is cut; the records end there."""
        return self.index.end

    def read(self, start: int, end: int) -> bytes:
        """The log's bytes from `start` to `end`."""
        if self.path is None or start >= end:
            return b""
        with open(self.path, "rb", buffering=0) as file:
            return pread(file.fileno(), start, end)

    def iter_records(self) -> Iterator[Record]:
        """Every complete record, in order, decoded one at a time."""
        for frame in iter_frames(self.read, len(MAGIC), self.size):
            yield decode_payload(frame[FRAME_HEADER_SIZE:])

    @property
    def records(self) -> tuple[Record, ...]:
        return tuple(self.iter_records())

    def ends(self) -> list[int]:
        """The offset just after each record (read from the file: for tests and tools)."""
        out, end = [], len(MAGIC)
        for frame in iter_frames(self.read, len(MAGIC), self.size):
            end += len(frame)
            out.append(end)
        return out


def recover(path: Path) -> Recovery:
    try:
        file = open(path, "rb", buffering=0)  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        create_log(path)
        return Recovery(None, path)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    with file:
        fd = file.fileno()
        try:
            size = os.fstat(fd).st_size
            head = pread(fd, 0, len(MAGIC))
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
        if len(head) < len(MAGIC):
            if not MAGIC.startswith(head):
                raise StoreError(f"{path} is not a broker_ref log")
            create_log(path)
            return Recovery(TornTail(0, len(head), "log header cut short") if head else None, path)
        if head != MAGIC:
            raise StoreError(f"{path} is not a broker_ref log (bad magic)")
        scan = _Scan(fd, size)
        end, reason = scan.run()
        recovery = Recovery(None, path, scan.index, tuple(scan.runs), tuple(scan.boundaries))
        if reason is None:
            return recovery
        # The damaged part is read whole: a node that finds damage does not start anyway.
        rest = memoryview(pread(fd, end, size))
        resumes_at = _next_valid_frame(rest, 1, scan.last_txid)
    if resumes_at is not None:
        raise StoreCorrupt(str(path), end, reason, end + resumes_at)
    _truncate(path, end)
    torn = TornTail(end, size - end, reason)
    return Recovery(torn, path, scan.index, tuple(scan.runs), tuple(scan.boundaries))


class _Scan:
    """Every complete record from the start, read a few megabytes at a time: where they
    are, their txids' runs and their terms' boundaries."""

    def __init__(self, fd: int, size: int) -> None:
        self.index = FrameIndex(len(MAGIC))
        self.runs: list[tuple[int, int]] = []
        self.boundaries: list[tuple[int, int]] = []
        self.last_txid = 0
        self._fd, self._size = fd, size
        self._chunk, self._chunk_at = b"", 0

    def _view(self, offset: int, length: int) -> memoryview:
        """The file's bytes from `offset`, `length` of them (the file is known to hold them)."""
        at = offset - self._chunk_at
        if at < 0 or at + length > len(self._chunk):
            self._chunk = pread(self._fd, offset, min(self._size, offset + max(length, _CHUNK)))
            self._chunk_at, at = offset, 0
        return memoryview(self._chunk)[at : at + length]

    def run(self) -> tuple[int, str | None]:
        """The offset after the last complete record, and why the scan stopped there."""
        size, offset = self._size, len(MAGIC)
        last_term = -1
        while offset < size:
            if size - offset < FRAME_HEADER_SIZE:
                return offset, "frame header cut short"
            length, crc = read_frame_header(self._view(offset, FRAME_HEADER_SIZE), 0)
            start = offset + FRAME_HEADER_SIZE
            if length > MAX_PAYLOAD_SIZE or start + length > size:
                return offset, "frame runs past the end of the file"
            payload = self._view(start, length)
            if zlib.crc32(payload) != crc:
                return offset, "CRC mismatch"
            try:
                record = decode_payload(payload)
            except ValueError as exc:
                return offset, f"malformed record: {exc}"
            txid = record.txid
            if txid <= self.last_txid:
                return offset, f"txid {txid} does not follow {self.last_txid}"
            if txid != self.last_txid + 1 or not self.runs:
                self.runs.append((txid, self.index.count))
            if record.term != last_term:
                self.boundaries.append((record.term, txid))
                last_term = record.term
            self.last_txid = txid
            offset = start + length
            self.index.add(offset)
        return offset, None


def pread(fd: int, start: int, end: int) -> bytes:
    """The bytes of `fd` from `start` to `end`, fewer only where the file ends first."""
    parts: list[bytes] = []
    while start < end:
        part = os.pread(fd, end - start, start)
        if not part:
            break
        parts.append(part)
        start += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _next_valid_frame(data: memoryview, start: int, last_txid: int) -> int | None:
    """The offset of the first frame at or after `start` that passes its CRC, decodes, and
    carries a txid after `last_txid`; None when there is none (the bad part is a tail)."""
    size = len(data)
    if not any(data[start - 1 :]):
        return None  # zeros to the end: a file extended and never written
    for offset in range(start, size - FRAME_HEADER_SIZE + 1):
        length, crc = read_frame_header(data, offset)
        begin = offset + FRAME_HEADER_SIZE
        if length == 0 or length > MAX_PAYLOAD_SIZE or begin + length > size:
            continue
        payload = data[begin : begin + length]
        if zlib.crc32(payload) != crc:
            continue
        try:
            record = decode_payload(payload)
        except ValueError:
            continue
        if record.txid > last_txid:
            return offset
    return None


def create_log(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, MAGIC)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)


def _truncate(path: Path, size: int) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
