"""Where each record of a log of frames starts, at 8 bytes of memory per `MARK_EVERY` records.

The store's log and the frame log hold their records as frames end to end (a header with
the payload's length, then the payload). Keeping every record's offset costs 8 bytes a
record, which under a long load is the only part of a node's memory that grows with the
log. The index keeps one offset in `MARK_EVERY` (the start of records MARK_EVERY,
2 MARK_EVERY, ...) and the ends of the records after the last mark, and finds any other
by reading the frame headers after the mark before it: at most MARK_EVERY - 1 headers, read
a chunk at a time through the log's own `read`.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator

from broker_ref.records import FRAME_HEADER_SIZE, read_frame_header

__all__ = ["MARK_EVERY", "FrameIndex", "Reader", "frame_ends", "iter_frames", "whole_frames"]

MARK_EVERY = 128
_WALK_CHUNK = 64 << 10  # bytes read at a time while walking from a mark
_ITER_CHUNK = 4 << 20  # bytes read at a time while iterating over every frame

Reader = Callable[[int, int], bytes]  # the log's bytes from one offset to another


class FrameIndex:
    """The number of records, the offset just after the last, every `every`-th start, and
    the ends of the records since the last of those (fewer than `every`), so that the
    newest records, the ones a replica streams when it keeps up, are found without a walk."""

    def __init__(self, base: int, every: int = MARK_EVERY) -> None:
        if every < 1:
            raise ValueError(f"every must be at least 1, not {every}")
        self.base = base  # where the first frame starts
        self.every = every
        self.count = 0
        self.end = base
        self._marks: array[int] = array("q")  # _marks[j] starts record (j + 1) * every
        self._recent: array[int] = array("q")  # the ends of records len(_marks) * every, ...

    def add(self, end: int) -> None:
        """One more record, ending at `end`."""
        self.count += 1
        self.end = end
        if self.count % self.every == 0:
            self._marks.append(end)
            del self._recent[:]
        else:
            self._recent.append(end)

    def start_of(self, index: int, read: Reader) -> int:
        """Where record `index` (from 0) starts; `count` gives the end of the last."""
        if not 0 <= index <= self.count:
            raise IndexError(f"record {index} of {self.count}")
        if index == self.count:
            return self.end
        mark = index // self.every
        after = index - mark * self.every  # records between the mark and this one
        at = self._marks[mark - 1] if mark else self.base
        if mark == len(self._marks) and after:
            return self._recent[after - 1]
        return frame_ends(at, after, read, self.end)[-1] if after else at

    def truncate(self, keep: int, read: Reader) -> int:
        """Keep the first `keep` records; return where the log now ends."""
        end = self.start_of(keep, read)
        mark = keep // self.every
        if mark < len(self._marks):  # the ends after the new last mark, read back
            at = self._marks[mark - 1] if mark else self.base
            self._recent = array("q", frame_ends(at, keep - mark * self.every, read, end))
            del self._marks[mark:]
        else:
            del self._recent[keep - mark * self.every :]
        self.count = keep
        self.end = end
        return end

    def shifted(self, delta: int) -> FrameIndex:
        """The same records in a log whose offsets are `delta` more."""
        copy = FrameIndex(self.base + delta, self.every)
        copy.count, copy.end = self.count, self.end + delta
        copy._marks = array("q", (mark + delta for mark in self._marks))
        copy._recent = array("q", (end + delta for end in self._recent))
        return copy


def frame_ends(at: int, count: int, read: Reader, limit: int) -> list[int]:
    """The ends of the `count` frames from the one starting at `at`, reading only headers'
    chunks of the log below `limit`."""
    ends: list[int] = []
    chunk, chunk_at = b"", at
    while len(ends) < count:
        if at + FRAME_HEADER_SIZE > chunk_at + len(chunk):
            chunk, chunk_at = read(at, min(limit, at + _WALK_CHUNK)), at
            if len(chunk) < FRAME_HEADER_SIZE:
                raise ValueError(f"no frame header at offset {at}")
        length, _ = read_frame_header(chunk, at - chunk_at)
        at += FRAME_HEADER_SIZE + length
        ends.append(at)
    return ends


def whole_frames(span: bytes | memoryview) -> Iterator[memoryview]:
    """The complete frames at the start of `span`, each with its header; a frame cut off by
    the end of `span` is not one of them."""
    view, at = memoryview(span), 0
    while at + FRAME_HEADER_SIZE <= len(view):
        length, _ = read_frame_header(view, at)
        end = at + FRAME_HEADER_SIZE + length
        if end > len(view):
            return
        yield view[at:end]
        at = end


def iter_frames(read: Reader, start: int, end: int) -> Iterator[memoryview]:
    """Every frame from `start` to `end`, with its header, reading a few megabytes at a time
    (a frame larger than that in one read of its own)."""
    at = start
    while at < end:
        chunk = read(at, min(end, at + _ITER_CHUNK))
        if len(chunk) < FRAME_HEADER_SIZE:
            raise ValueError(f"no frame header at offset {at}")
        taken = 0
        for frame in whole_frames(chunk):
            taken += len(frame)
            yield frame
        if not taken:  # one frame longer than the chunk
            length, _ = read_frame_header(chunk, 0)
            frame_end = at + FRAME_HEADER_SIZE + length
            if frame_end > end:
                raise ValueError(f"the frame at offset {at} runs past {end}")
            taken = frame_end - at
            yield memoryview(read(at, frame_end))
        at += taken
