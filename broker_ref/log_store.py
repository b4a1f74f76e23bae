"""The node's append-only on-disk log: every durable change, in transaction-id order.

The log is one file, `store.log` in the data directory: an 8-byte magic, then
frames as `records` defines them. Appends go to a memory buffer; `write_out`
hands the buffer to the OS (it survives a crash of the process, not of the
machine); `sync` writes and fsyncs it, and only then are the records durable.
A node that rejoins its group may have to discard its newest records
(`truncate_after`), or all of them before a full copy from the master. On
open, the log is read back (log_recovery.py: a torn tail cut off, damage refused). A
lock file keeps two nodes off one data directory.
"""

from __future__ import annotations

import bisect
import fcntl
import os
from pathlib import Path

from broker_ref.errors import StoreError
from broker_ref.frame_index import FrameIndex
from broker_ref.log_recovery import MAGIC, Recovery, TornTail, pread, recover
from broker_ref.records import Record, encode_frame

__all__ = ["LOG_FILE_NAME", "MAGIC", "LogStore", "Recovery", "TornTail"]

LOG_FILE_NAME = "store.log"
_LOCK_FILE_NAME = "store.lock"


class LogStore:
    """An open log: append records with rising transaction ids, then `sync` to make them durable.

    Used from one thread (the reactor's); `durable_txid` may be read from any thread.
    """

    def __init__(
        self, path: Path, fd: int, lock_fd: int, index: FrameIndex, runs: list[tuple[int, int]]
    ) -> None:
        self.path = path
        self._fd = fd
        self._lock_fd = lock_fd
        self._buffer = bytearray()
        # Where the records are: a sparse index (frame_index.py), not an offset a record,
        # for a log of millions of records. The txids are not kept one a record but as runs
        # of consecutive ones, each as (its first txid, the index of its first record): the
        # store asks only that txids rise, and every log the broker writes is one run.
        self._index = index
        self._runs = runs
        self._file_size = index.end
        self._last_txid = runs[-1][0] + index.count - 1 - runs[-1][1] if runs else 0
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
            recovery = recover(path)
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except BaseException:
            os.close(lock_fd)
            raise
        index = recovery.index.shifted(0)  # the store's own
        return cls(path, fd, lock_fd, index, list(recovery.runs)), recovery

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
            self._runs.append((txid, self._index.count))
        self._buffer += frame
        self._last_txid = txid
        self._index.add(self._file_size + len(self._buffer))

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
            run_end = runs[at + 1][1] if at + 1 < len(runs) else self._index.count
            keep = min(run_end, index + txid - first + 1)
        dropped = self._index.count - keep
        if dropped == 0:
            return 0
        end = self._index.start_of(keep, self._read)
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
        self._index.truncate(keep, self._read)
        while runs and runs[-1][1] >= keep:
            runs.pop()
        self._last_txid = runs[-1][0] + keep - 1 - runs[-1][1] if runs else 0
        self.written_txid = min(self.written_txid, self._last_txid)
        self.durable_txid = min(self.durable_txid, self._last_txid)
        return dropped

    def _read(self, start: int, end: int) -> bytes:
        """The log's bytes from `start` to `end`: from the file, then the buffer."""
        size = self._file_size
        part = pread(self._fd, start, min(end, size)) if start < size else b""
        if end > size:
            part += self._buffer[max(start, size) - size : end - size]
        return part

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
