"""The node's append-only on-disk log: every durable change, in transaction-id order.

The log is one file, `store.log` in the data directory: an 8-byte magic, then
frames as `records` defines them. Appends go to a memory buffer; `write_out`
hands the buffer to the OS (it survives a crash of the process, not of the
machine); `sync` writes and fsyncs it, and only then are the records durable.
A node that rejoins its group may have to discard its newest records
(`truncate_after`), or all of them before a full copy from the master. On
open, the log is read back; a torn tail (a crash mid-write, zeros or garbage after
the last frame, a last frame that fails its CRC) is cut off at the end of the last
complete frame, which is never lost. A bad frame with valid frames after it is not a
torn write but damage: recovery raises StoreCorrupt (naming the file and the offset)
instead of dropping what follows, as etcd's WAL does. A lock file keeps two nodes off
one data directory.
"""

from __future__ import annotations

import bisect
import fcntl
import os
import zlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from broker_ref.errors import StoreCorrupt, StoreError
from broker_ref.records import (
    FRAME_HEADER_SIZE,
    MAX_PAYLOAD_SIZE,
    Record,
    decode_payload,
    encode_frame,
    read_frame_header,
)

__all__ = ["LOG_FILE_NAME", "MAGIC", "LogStore", "Recovery", "TornTail"]

MAGIC = b"BRLOG\x00\x02\n"
LOG_FILE_NAME = "store.log"
_LOCK_FILE_NAME = "store.lock"


@dataclass(frozen=True)
class TornTail:
    """The part of the log that recovery cut off: where, how much, and why."""

    offset: int
    dropped_bytes: int
    reason: str


@dataclass(frozen=True)
class Recovery:
    """What `LogStore.open` read back: the log's bytes, each complete record's txid, term
    and end offset in them, and the tail it dropped.

    The records stay encoded (`iter_records` decodes them one at a time): a node restarted
    on a long log rebuilds its queues and its frame log from these bytes without holding
    every record decoded at once, which used to take a few times the log's size.
    """

    torn_tail: TornTail | None
    data: bytes = MAGIC  # the log as read; the records end at `size`
    txids: array[int] = field(default_factory=lambda: array("q"))
    terms: array[int] = field(default_factory=lambda: array("q"))
    ends: array[int] = field(default_factory=lambda: array("q"))  # the offset after each
    size: int = len(MAGIC)  # the log's size once the torn tail is cut

    def iter_records(self) -> Iterator[Record]:
        """Every complete record, in order, decoded one at a time."""
        view = memoryview(self.data)
        start = len(MAGIC)
        for end in self.ends:
            yield decode_payload(view[start + FRAME_HEADER_SIZE : end])
            start = end

    @property
    def records(self) -> tuple[Record, ...]:
        return tuple(self.iter_records())


class LogStore:
    """An open log: append records with rising transaction ids, then `sync` to make them durable.

    Used from one thread (the reactor's); `durable_txid` may be read from any thread.
    """

    def __init__(
        self, path: Path, fd: int, lock_fd: int, txids: array[int], ends: array[int], size: int
    ) -> None:
        self.path = path
        self._fd = fd
        self._lock_fd = lock_fd
        self._buffer = bytearray()
        # The file offset just after each record: 8 bytes a record (a list of ints would
        # take 36), for a log of millions of records. The txids are not kept one a record
        # but as runs of consecutive ones, each as (its first txid, the index of its first
        # record): the store asks only that txids rise, and every log the broker writes is
        # one run (1, 2, 3, ...).
        self._ends = ends
        self._runs: list[tuple[int, int]] = []
        if txids and txids[-1] - txids[0] == len(txids) - 1:  # rising, so one run
            self._runs.append((txids[0], 0))
        else:
            for index, txid in enumerate(txids):
                if not index or txid != txids[index - 1] + 1:
                    self._runs.append((txid, index))
        self._file_size = size
        self._last_txid = txids[-1] if txids else 0
        self.written_txid = self._last_txid
        self.durable_txid = self._last_txid

    @classmethod
    def open(cls, data_dir: Path) -> tuple[LogStore, Recovery]:
        """Lock `data_dir`, read its log back (cutting a torn tail), and open it for appends."""
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create data_dir {data_dir}: {exc.strerror}") from exc
        lock_fd = _lock(data_dir / _LOCK_FILE_NAME)
        try:
            path = data_dir / LOG_FILE_NAME
            recovery = _recover(path)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except BaseException:
            os.close(lock_fd)
            raise
        ends = array("q", recovery.ends)  # the store's own
        return cls(path, fd, lock_fd, recovery.txids, ends, recovery.size), recovery

    @property
    def next_txid(self) -> int:
        """The transaction id the next appended record must carry."""
        return self._last_txid + 1

    @property
    def last_txid(self) -> int:
        """The highest transaction id appended, durable or not."""
        return self._last_txid

    @property
    def has_unsynced(self) -> bool:
        return self._last_txid != self.durable_txid

    def append(self, record: Record) -> None:
        """Add `record` to the log; it is durable after the next `sync`."""
        self.append_frame(record.txid, encode_frame(record))

    def append_frame(self, txid: int, frame: bytes) -> None:
        """Add an already encoded record (as a replica receives it from its master)."""
        if txid <= self._last_txid:
            raise StoreError(f"txid {txid} does not follow {self._last_txid}")
        if not self._runs or txid != self._last_txid + 1:
            self._runs.append((txid, len(self._ends)))
        self._buffer += frame
        self._last_txid = txid
        self._ends.append(self._file_size + len(self._buffer))

    def write_out(self) -> int:
        """Hand everything appended to the OS without fsync; return the highest txid written."""
        if self._buffer:
            try:
                self._write_buffer()
            except OSError as exc:
                raise StoreError(f"cannot write {self.path}: {exc.strerror}") from exc
        self.written_txid = self._last_txid
        return self.written_txid

    def _write_buffer(self) -> None:
        while self._buffer:
            written = os.write(self._fd, self._buffer)
            del self._buffer[:written]
            self._file_size += written

    def sync(self) -> int:
        """Write and fsync everything appended; return the highest durable transaction id.

        On a write error (a full disk) the bytes not yet written stay buffered, so a later
        `sync` continues the log exactly where the failed one stopped.
        """
        if self._last_txid == self.durable_txid:
            return self.durable_txid
        try:
            self._write_buffer()
            os.fdatasync(self._fd)
        except OSError as exc:
            raise StoreError(f"cannot write {self.path}: {exc.strerror}") from exc
        self.written_txid = self.durable_txid = self._last_txid
        return self.durable_txid

    def truncate_after(self, txid: int) -> int:
        """Discard every record after `txid` (all of them for 0); return how many went."""
        runs = self._runs
        keep = 0  # how many records have a txid up to `txid`
        at = bisect.bisect_right(runs, txid, key=_first_txid) - 1  # the run `txid` is in or after
        if at >= 0:
            first, index = runs[at]
            run_end = runs[at + 1][1] if at + 1 < len(runs) else len(self._ends)
            keep = min(run_end, index + txid - first + 1)
        dropped = len(self._ends) - keep
        if dropped == 0:
            return 0
        end = self._ends[keep - 1] if keep else len(MAGIC)
        if end < self._file_size:
            self._buffer.clear()
            try:
                os.ftruncate(self._fd, end)
                os.fsync(self._fd)
            except OSError as exc:
                raise StoreError(f"cannot truncate {self.path}: {exc.strerror}") from exc
            self._file_size = end
        else:
            del self._buffer[end - self._file_size :]
        del self._ends[keep:]
        while runs and runs[-1][1] >= keep:
            runs.pop()
        self._last_txid = runs[-1][0] + keep - 1 - runs[-1][1] if runs else 0
        self.written_txid = min(self.written_txid, self._last_txid)
        self.durable_txid = min(self.durable_txid, self._last_txid)
        return dropped

    def close(self) -> None:
        """Sync what is left, close the log and release the data directory."""
        try:
            self.sync()
        finally:
            os.close(self._fd)
            os.close(self._lock_fd)


def _first_txid(run: tuple[int, int]) -> int:
    return run[0]


def _lock(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        raise StoreError(f"data_dir {path.parent} is in use by another node") from exc
    return fd


def _recover(path: Path) -> Recovery:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    if len(data) < len(MAGIC):
        if not MAGIC.startswith(data):
            raise StoreError(f"{path} is not a broker_ref log")
        _create(path)
        torn = TornTail(0, len(data), "log header cut short") if data else None
        return Recovery(torn)
    if not data.startswith(MAGIC):
        raise StoreError(f"{path} is not a broker_ref log (bad magic)")
    scan = _Scan()
    end, reason = scan.run(memoryview(data))
    if reason is None:
        return Recovery(None, data, scan.txids, scan.terms, scan.ends, end)
    last_txid = scan.txids[-1] if scan.txids else 0
    resumes_at = _next_valid_frame(memoryview(data), end + 1, last_txid)
    if resumes_at is not None:
        raise StoreCorrupt(str(path), end, reason, resumes_at)
    _truncate(path, end)
    torn = TornTail(end, len(data) - end, reason)
    return Recovery(torn, data, scan.txids, scan.terms, scan.ends, end)


class _Scan:
    """Every complete record from the start: its txid, term and end offset."""

    def __init__(self) -> None:
        self.txids: array[int] = array("q")
        self.terms: array[int] = array("q")
        self.ends: array[int] = array("q")

    def run(self, data: memoryview) -> tuple[int, str | None]:
        """The offset after the last complete record, and why the scan stopped there."""
        size = len(data)
        offset = len(MAGIC)
        last_txid = 0
        while offset < size:
            if size - offset < FRAME_HEADER_SIZE:
                return offset, "frame header cut short"
            length, crc = read_frame_header(data, offset)
            start = offset + FRAME_HEADER_SIZE
            if length > MAX_PAYLOAD_SIZE or start + length > size:
                return offset, "frame runs past the end of the file"
            payload = data[start : start + length]
            if zlib.crc32(payload) != crc:
                return offset, "CRC mismatch"
            try:
                record = decode_payload(payload)
            except ValueError as exc:
                return offset, f"malformed record: {exc}"
            if record.txid <= last_txid:
                return offset, f"txid {record.txid} does not follow {last_txid}"
            last_txid = record.txid
            offset = start + length
            self.txids.append(record.txid)
            self.terms.append(record.term)
            self.ends.append(offset)
        return offset, None


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


def _create(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, MAGIC)
        os.fsync(fd)
    finally:
        os.close(fd)
    _fsync_dir(path.parent)


def _truncate(path: Path, size: int) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
