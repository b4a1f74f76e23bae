"""Every record a node holds, as encoded frames with their terms, for the replication stream.

Transaction ids are contiguous from 1, so a record's place is `txid - 1`. The
reactor thread appends and truncates; the group thread reads slices to stream
to replicas and the term boundaries to find where a rejoining node diverged.
"""

from __future__ import annotations

import threading

__all__ = ["FrameLog", "term_in"]


class FrameLog:
    def __init__(self) -> None:
        self._frames: list[bytes] = []
        self._terms: list[int] = []
        self._boundaries: list[tuple[int, int]] = []  # (term, first txid of that term)
        self._lock = threading.Lock()

    def append(self, txid: int, term: int, frame: bytes) -> None:
        with self._lock:
            if txid != len(self._frames) + 1:
                raise ValueError(f"txid {txid} does not follow {len(self._frames)}")
            self._frames.append(frame)
            self._terms.append(term)
            if not self._boundaries or self._boundaries[-1][0] != term:
                self._boundaries.append((term, txid))

    @property
    def last_txid(self) -> int:
        return len(self._frames)

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
            return self._terms[max(0, txid - 1) :]

    def frames(self, first_txid: int, max_bytes: int) -> list[bytes]:
        """Frames from `first_txid` on, at least one, up to about `max_bytes` in all."""
        out: list[bytes] = []
        size = 0
        with self._lock:
            for frame in self._frames[first_txid - 1 :]:
                out.append(frame)
                size += len(frame)
                if size >= max_bytes:
                    break
        return out

    def truncate_after(self, txid: int) -> int:
        """Drop the records after `txid`; return how many."""
        with self._lock:
            dropped = max(0, len(self._frames) - txid)
            del self._frames[txid:]
            del self._terms[txid:]
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
