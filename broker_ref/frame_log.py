"""Every record a node holds, as encoded frames with their terms, for the replication stream.

Transaction ids are contiguous from 1, so a record's place is `txid - 1`. The
reactor thread appends and truncates; the group thread reads slices to stream
to replicas and the term boundaries to find where a rejoining node diverged.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterator
from typing import Protocol

from broker_ref.records import FRAME_HEADER_SIZE, Record, decode_payload

__all__ = ["FrameLog", "ReadBack", "term_in"]


class ReadBack(Protocol):
    """Each record's txid, term and end offset, as a store read them back."""

    @property
    def txids(self) -> array[int]: ...
    @property
    def terms(self) -> array[int]: ...
    @property
    def ends(self) -> array[int]: ...


class FrameLog:
    """The frames end to end in one buffer, with each one's end offset and term in arrays:
    8 + 8 bytes a record beside the frame itself (a bytes object and two list slots per
    record took 49 more), which is most of what a node holds per message under long load."""

    def __init__(self) -> None:
        self._data = bytearray()
        self._ends: array[int] = array("q")  # offset just after each frame in _data
        self._terms: array[int] = array("q")
        self._boundaries: list[tuple[int, int]] = []  # (term, first txid of that term)
        self._lock = threading.Lock()

    def append(self, txid: int, term: int, frame: bytes) -> None:
        with self._lock:
            if txid != len(self._ends) + 1:
                raise ValueError(f"txid {txid} does not follow {len(self._ends)}")
            self._data += frame
            self._ends.append(len(self._data))
            self._terms.append(term)
            if not self._boundaries or self._boundaries[-1][0] != term:
                self._boundaries.append((term, txid))

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
            self._data = bytearray(memoryview(data)[start : ends[-1]])
            self._ends = array("q", (end - start for end in ends))
            self._terms = array("q", terms)
            previous = None
            for index, term in enumerate(self._terms):
                if term != previous:
                    self._boundaries.append((term, index + 1))
                    previous = term

    def records(self) -> Iterator[Record]:
        """Every record, decoded one at a time (the reactor's: it alone changes the log)."""
        start = 0
        for end in self._ends:
            yield decode_payload(bytes(self._data[start + FRAME_HEADER_SIZE : end]))
            start = end

    @property
    def last_txid(self) -> int:
        return len(self._ends)

    def last_term(self) -> int:
        with self._lock:
            return self._terms[-1] if self._terms else 0

    def term_at(self, txid: int) -> int | None:
        with self._lock:
            return self._terms[txid - 1] if 0 < txid <= len(self._terms) else None

    def boundaries(self) -> list[tuple[int, int]]:
        with self._lock:
            return list(self._boundaries)

    def terms_from(self, txid: int) -> list[int]:
        """The terms of the records from `txid` on (to compare with a master's history)."""
        with self._lock:
            return self._terms[max(0, txid - 1) :].tolist()

    def frames(self, first_txid: int, max_bytes: int) -> list[bytes]:
        """Frames from `first_txid` on, at least one, up to about `max_bytes` in all."""
        out: list[bytes] = []
        size = 0
        with self._lock:
            ends, data = self._ends, self._data
            if first_txid > len(ends):
                return out
            start = ends[first_txid - 2] if first_txid > 1 else 0
            for index in range(max(0, first_txid - 1), len(ends)):
                end = ends[index]
                out.append(bytes(data[start:end]))
                size += end - start
                start = end
                if size >= max_bytes:
                    break
        return out

    def truncate_after(self, txid: int) -> int:
        """Drop the records after `txid`; return how many."""
        with self._lock:
            keep = max(0, txid)
            dropped = max(0, len(self._ends) - keep)
            if dropped:
                del self._data[self._ends[keep - 1] if keep else 0 :]
                del self._ends[keep:]
                del self._terms[keep:]
            while self._boundaries and self._boundaries[-1][1] > txid:
                self._boundaries.pop()
            return dropped


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
