"""Every record a node holds, as encoded frames with their terms, for the replication stream.

Transaction ids are contiguous from 1, so a record's place is `txid - 1`. The
reactor thread appends and truncates; the group thread reads slices to stream
to replicas and the term boundaries to find where a rejoining node diverged.

The frames are kept in an anonymous temporary file (unlinked as it is made, in the
system's temporary directory, never the node's data folder), with only the newest
ones (up to `TAIL_BYTES`) in memory: under long load a node's memory grows by the
array's 8 bytes a record, not by its frames. The terms are kept as runs (each
term with its first txid), not one a record. Should the file not be writable (no
space left), the frames stay in memory and the next flush tries again.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import tempfile
import threading
from array import array
from collections.abc import Iterator
from typing import IO, Protocol

from broker_ref.records import FRAME_HEADER_SIZE, Record, decode_payload

__all__ = ["TAIL_BYTES", "FrameLog", "ReadBack", "term_in"]

TAIL_BYTES = 1 << 20  # the newest frames kept in memory before they go to the file
_CHUNK = 4 << 20  # how much `restore` writes and `records` reads at a time


class ReadBack(Protocol):
    """Each record's txid, term and end offset, as a store read them back."""

    @property
    def txids(self) -> array[int]: ...
    @property
    def terms(self) -> array[int]: ...
    @property
    def ends(self) -> array[int]: ...


class FrameLog:
    """The frames end to end: the older ones in a temporary file, the newest in a tail
    buffer, with each one's end offset in an array (8 bytes a record in memory) and the
    terms as boundaries: each term with the txid of its first record, the runs in order.

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
        self._ends: array[int] = array("q")  # offset just after each frame
        self._boundaries: list[tuple[int, int]] = []  # (term, first txid of that term)
        self._firsts: list[int] = []  # each boundary's first txid, to bisect
        self._lock = threading.Lock()

    def append(self, txid: int, term: int, frame: bytes) -> None:
        with self._lock:
            if txid != len(self._ends) + 1:
                raise ValueError(f"txid {txid} does not follow {len(self._ends)}")
            used = self._used
            self._tail[used : used + len(frame)] = frame  # grows the buffer if it must
            self._used = used = used + len(frame)
            self._ends.append(self._flushed + used)
            if not self._boundaries or self._boundaries[-1][0] != term:
                self._boundaries.append((term, txid))
                self._firsts.append(txid)
            if used >= self._flush_at:
                self._flush()

    def restore(self, data: bytes, start: int, read: ReadBack) -> None:
        """Load an empty log with the frames a store read back: `data[start:ends[-1]]`, each
        record's txid (1, 2, ... as `append` asks), term, and end offset in `data`."""
        txids, ends, terms = read.txids, read.ends, read.terms
        with self._lock:
            if self._ends:
                raise ValueError("restore into a frame log that holds records")
            for place, txid in enumerate(txids, 1):
                if txid != place:
                    raise ValueError(f"txid {txid} does not follow {place - 1}")
            if not ends:
                return
            view = memoryview(data)[start : ends[-1]]
            done = 0
            if len(view) >= self._tail_bytes:  # straight to the file, a chunk at a time
                done = self._write(view, 0)
                self._flushed = done
            self._tail = bytearray(view[done:])
            self._used = len(self._tail)
            self._ends = array("q", (end - start for end in ends))
            previous = None
            for txid, term in enumerate(terms, 1):
                if term != previous:
                    self._boundaries.append((term, txid))
                    self._firsts.append(txid)
                    previous = term

    def records(self) -> Iterator[Record]:
        """Every record, decoded one at a time (the reactor's: it alone changes the log)."""
        ends, count = self._ends, len(self._ends)
        index, start = 0, 0
        while index < count:
            stop = max(index + 1, bisect.bisect_right(ends, start + _CHUNK, index, count))
            with self._lock:
                chunk = memoryview(self._read(start, ends[stop - 1]))
            offset = start
            for end in ends[index:stop]:
                yield decode_payload(chunk[offset - start + FRAME_HEADER_SIZE : end - start])
                offset = end
            index, start = stop, offset

    @property
    def last_txid(self) -> int:
        return len(self._ends)

    def last_term(self) -> int:
        with self._lock:
            return self._boundaries[-1][0] if self._boundaries else 0

    def term_at(self, txid: int) -> int | None:
        with self._lock:
            if not 0 < txid <= len(self._ends):
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
            starts = [*self._firsts[1:], len(self._ends) + 1]  # where each term's run stops
            for (term, first), stop in zip(self._boundaries, starts, strict=True):
                if stop > txid:
                    terms += [term] * (stop - max(first, txid))
            return terms

    def frames(self, first_txid: int, max_bytes: int) -> list[bytes]:
        """Frames from `first_txid` on, at least one, up to about `max_bytes` in all."""
        with self._lock:
            ends = self._ends
            first = max(0, first_txid - 1)
            if first >= len(ends) or self._closed:
                return []
            start = ends[first - 1] if first else 0
            stop = min(len(ends), bisect.bisect_left(ends, start + max_bytes, first) + 1)
            span, taken = self._read(start, ends[stop - 1]), ends[first:stop]
        out: list[bytes] = []
        offset = start
        for end in taken:
            out.append(span[offset - start : end - start])
            offset = end
        return out

    def truncate_after(self, txid: int) -> int:
        """Drop the records after `txid`; return how many."""
        with self._lock:
            keep = max(0, txid)
            dropped = max(0, len(self._ends) - keep)
            if dropped:
                end = self._ends[keep - 1] if keep else 0
                if end >= self._flushed:
                    self._used = end - self._flushed
                else:
                    self._used = 0
                    self._flushed, self._flush_at = end, self._tail_bytes
                    if self._file is not None:  # past `_flushed` is overwritten anyway
                        with contextlib.suppress(OSError):
                            os.ftruncate(self._file.fileno(), end)
                del self._ends[keep:]
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
