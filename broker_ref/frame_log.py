"""Every record a node holds, as encoded frames with their terms, for the replication stream.

Transaction ids are contiguous from 1, so a record's place is `txid - 1`. The
reactor thread appends and truncates; the group thread reads slices to stream
to replicas and the term boundaries to find where a rejoining node diverged.

The frames are kept in an anonymous temporary file (unlinked as it is made, in the
system's temporary directory, never the node's data folder), with only the newest
ones (up to `TAIL_BYTES`) in memory, and where each frame starts in a sparse index: under
long load a node's memory does not grow with its frames. The terms are kept as runs (each
term with its first txid), not one a record. Should the file not be writable (no
space left), the frames stay in memory and the next flush tries again.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from typing import IO, Protocol

from broker_ref.frame_index import FrameIndex, iter_frames, whole_frames
from broker_ref.records import FRAME_HEADER_SIZE, Record, decode_payload, read_frame_header

__all__ = ["TAIL_BYTES", "FrameLog", "FrameSource", "term_in"]

TAIL_BYTES = 1 << 20  # the newest frames kept in memory before they go to the file
_CHUNK = 4 << 20  # how much `restore` writes and `records` reads at a time


class FrameSource(Protocol):
    """A log a store read back: its records' frames, terms and txids, to restore from."""

    @property
    def index(self) -> FrameIndex: ...
    @property
    def boundaries(self) -> tuple[tuple[int, int], ...]: ...  # (term, its first txid)
    @property
    def runs(self) -> tuple[tuple[int, int], ...]: ...  # (first txid, its record's place)

    def read(self, start: int, end: int) -> bytes: ...


class FrameLog:
    """The frames end to end: the older ones in a temporary file, the newest in a tail
    buffer, with a sparse index of where they start (frame_index.py: 8 bytes in memory per
    128 records) and the terms as boundaries: each term with the txid of its first record,
    the runs in order.

    Bytes at offsets below `_flushed` are in the file, the next `_used` in `_tail`. The file
    is made at the first flush, so a log that never outgrows its tail has none. The tail's
    buffer is reused, not freed at each flush: a buffer of a megabyte made and freed over
    and over leaves the allocator's heap in pieces that grow with the log."""

    def __init__(self, tail_bytes: int = TAIL_BYTES, directory: str | None = None) -> None:
        self._tail_bytes = tail_bytes
        self._directory = directory
        self._file: IO[bytes] | None = None
        self._closed = False
        self._flushed = 0  # bytes in the file
        self._flush_at = tail_bytes  # tail size at which the next flush is tried
        self._tail = bytearray()  # its first `_used` bytes are frames, the rest is free space
        self._used = 0
        self._index = FrameIndex(0)
        self._boundaries: list[tuple[int, int]] = []  # (term, first txid of that term)
        self._firsts: list[int] = []  # each boundary's first txid, to bisect
        self._lock = threading.Lock()

    def append(self, txid: int, term: int, frame: bytes) -> None:
        with self._lock:
            if txid != self._index.count + 1:
                raise ValueError(f"txid {txid} does not follow {self._index.count}")
            used = self._used
            self._tail[used : used + len(frame)] = frame  # grows the buffer if it must
            self._used = used = used + len(frame)
            self._index.add(self._flushed + used)
            if not self._boundaries or self._boundaries[-1][0] != term:
                self._boundaries.append((term, txid))
                self._firsts.append(txid)
            if used >= self._flush_at:
                self._flush()

    def restore(self, source: FrameSource) -> None:
        """Load an empty log with the frames of a store's read-back, whose txids must be
        1, 2, ... as `append` asks; copied a chunk at a time, never all in memory at once."""
        index = source.index
        with self._lock:
            if self._index.count:
                raise ValueError("restore into a frame log that holds records")
            runs = source.runs
            if runs and runs[0][0] != 1:
                raise ValueError(f"txid {runs[0][0]} does not follow 0")
            if len(runs) > 1:  # the second run's first txid does not follow the first run's last
                raise ValueError(f"txid {runs[1][0]} does not follow {runs[1][1]}")
            if not index.count:
                return
            start, size = index.base, index.end - index.base
            done = 0
            if size >= self._tail_bytes:  # straight to the file, a chunk at a time
                while done < size:
                    chunk = source.read(start + done, start + min(size, done + _CHUNK))
                    wrote = self._write(memoryview(chunk), done)
                    done += wrote
                    if wrote < len(chunk):
                        break  # the rest stays in memory
                self._flushed = done
            self._tail = bytearray(source.read(start + done, start + size))
            self._used = len(self._tail)
            self._index = index.shifted(-start)
            for term, first in source.boundaries:
                self._boundaries.append((term, first))
                self._firsts.append(first)

    def records(self) -> Iterator[Record]:
        """Every record, decoded one at a time (the reactor's: it alone changes the log)."""
        for frame in iter_frames(self._locked_read, 0, self._index.end):
            yield decode_payload(frame[FRAME_HEADER_SIZE:])

    def _locked_read(self, start: int, end: int) -> bytes:
        with self._lock:
            return self._read(start, end)

    @property
    def last_txid(self) -> int:
        return self._index.count

    def last_term(self) -> int:
        with self._lock:
            return self._boundaries[-1][0] if self._boundaries else 0

    def term_at(self, txid: int) -> int | None:
        with self._lock:
            if not 0 < txid <= self._index.count:
                return None
            return self._boundaries[bisect.bisect_right(self._firsts, txid) - 1][0]

    def boundaries(self) -> list[tuple[int, int]]:
        with self._lock:
            return list(self._boundaries)

    def terms_from(self, txid: int) -> list[int]:
        """The terms of the records from `txid` on (to compare with a master's history)."""
        with self._lock:
            txid = max(1, txid)
            terms: list[int] = []
            if not self._boundaries:
                return terms
            starts = [*self._firsts[1:], self._index.count + 1]  # where each term's run stops
            for (term, first), stop in zip(self._boundaries, starts, strict=True):
                if stop > txid:
                    terms += [term] * (stop - max(first, txid))
            return terms

    def frames(self, first_txid: int, max_bytes: int) -> list[bytes]:
        """Frames from `first_txid` on, up to the first that reaches `max_bytes` in all (at
        least one)."""
        with self._lock:
            index = self._index
            first = max(0, first_txid - 1)
            if first >= index.count or self._closed:
                return []
            start = index.start_of(first, self._read)
            span = self._read(start, min(index.end, start + max(1, max_bytes)))
            out = [bytes(frame) for frame in whole_frames(span)]
            taken = sum(map(len, out))
            if (not out or taken < max_bytes) and start + taken < index.end:  # one across the limit
                at = start + taken
                length, _ = read_frame_header(self._read(at, at + FRAME_HEADER_SIZE), 0)
                out.append(self._read(at, at + FRAME_HEADER_SIZE + length))
        return out

    def truncate_after(self, txid: int) -> int:
        """Drop the records after `txid`; return how many."""
        with self._lock:
            keep = max(0, txid)
            dropped = max(0, self._index.count - keep)
            if dropped:
                end = self._index.truncate(keep, self._read)
                if end >= self._flushed:
                    self._used = end - self._flushed
                else:
                    self._used = 0
                    self._flushed, self._flush_at = end, self._tail_bytes
                    if self._file is not None:  # past `_flushed` is overwritten anyway
                        with contextlib.suppress(OSError):
                            os.ftruncate(self._file.fileno(), end)
            while self._boundaries and self._boundaries[-1][1] > txid:
                self._boundaries.pop()
                self._firsts.pop()
            return dropped

    def close(self) -> None:
        """Let the file go (the node stops); the log serves no more frames from it."""
        with self._lock:
            self._closed = True
            file, self._file = self._file, None
            if file is not None:
                file.close()

    # ---- the file: with the lock held -----------------------------------------------------------

    def _flush(self) -> None:
        """Move the tail to the file; on an error it stays in memory until the next try."""
        done = self._write(memoryview(self._tail)[: self._used], self._flushed)
        self._flushed += done
        self._used -= done
        if self._used:  # kept in memory: the next try when as much again has come
            del self._tail[:done]
            self._flush_at = self._used + self._tail_bytes
        else:
            self._flush_at = self._tail_bytes
            if len(self._tail) > 2 * self._tail_bytes:  # after a large frame, or an error
                self._tail = bytearray()

    def _write(self, view: memoryview, at: int) -> int:
        """Write `view` to the file at offset `at`, a chunk at a time: how many bytes went."""
        done = 0
        try:
            if self._file is None:
                if self._closed:
                    return 0
                # open as long as the log is: `close` closes it
                self._file = tempfile.TemporaryFile(buffering=0, dir=self._directory)  # noqa: SIM115
            fd = self._file.fileno()
            while done < len(view):
                done += os.pwrite(fd, view[done : done + _CHUNK], at + done)
        except OSError:
            pass  # kept in memory: the caller keeps what did not go
        return done

    def _read(self, start: int, end: int) -> bytes:
        """The bytes from offset `start` to `end`, from the file and the tail."""
        flushed = self._flushed
        parts: list[bytes] = []
        if start < flushed:
            assert self._file is not None
            fd, position, last = self._file.fileno(), start, min(end, flushed)
            while position < last:
                part = os.pread(fd, last - position, position)
                if not part:
                    raise OSError(f"frame log file ends at {position}, before {last}")
                parts.append(part)
                position += len(part)
        if end > flushed:
            parts.append(bytes(self._tail[max(start, flushed) - flushed : end - flushed]))
        return parts[0] if len(parts) == 1 else b"".join(parts)


def term_in(boundaries: list[tuple[int, int]], last_txid: int, txid: int) -> int | None:
    """The term of `txid` in a history given by its boundaries and last txid."""
    if not 0 < txid <= last_txid:
        return None
    found: int | None = None
    for term, first in boundaries:
        if first > txid:
            break
        found = term
    return found
