"""broker_ref's sparse frame index: every record's start found from one mark in `every`, the
same as a full list of offsets says, through appends, truncations and shifts; the store's
log and the frame log keep their memory flat as records are added; recovery reads its log
a chunk at a time, frames larger than a chunk included."""

from __future__ import annotations

import gc
import random
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker_ref import frame_index, log_recovery
from broker_ref.frame_index import FrameIndex, iter_frames, whole_frames
from broker_ref.frame_log import FrameLog
from broker_ref.log_store import MAGIC, LogStore
from broker_ref.records import Enqueue, encode_frame


def _frame(size: int) -> bytes:
    return encode_frame(Enqueue(1, "q", 1, b"x" * size))


@settings(max_examples=80, deadline=None)
@given(
    every=st.sampled_from([1, 2, 3, 7, 128]),
    base=st.sampled_from([0, len(MAGIC)]),
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.lists(st.integers(0, 300), min_size=1, max_size=40)),
            st.tuples(st.just("truncate"), st.integers(0, 200)),
        ),
        max_size=12,
    ),
)
def test_every_start_is_what_a_full_list_of_offsets_says(
    every: int, base: int, steps: list[tuple[str, object]]
) -> None:
    log = bytearray(b"h" * base)
    starts: list[int] = []  # the start of every record, the plain way
    index = FrameIndex(base, every)

    def read(start: int, end: int) -> bytes:
        return bytes(log[start:end])

    for kind, value in steps:
        if kind == "add":
            assert isinstance(value, list)
            for size in value:
                starts.append(len(log))
                log += _frame(size)
                index.add(len(log))
        else:
            assert isinstance(value, int)
            keep = min(value, len(starts))
            end = index.truncate(keep, read)
            assert end == (starts[keep] if keep < len(starts) else len(log))
            del log[end:], starts[keep:]
        assert (index.count, index.end) == (len(starts), len(log))
        assert [index.start_of(i, read) for i in range(len(starts))] == starts
        assert index.start_of(len(starts), read) == len(log)
        moved = index.shifted(-base)
        assert [
            moved.start_of(i, lambda s, e: read(s + base, e + base)) for i in range(len(starts))
        ] == [start - base for start in starts]
        assert moved.every == every and moved.count == len(starts)
    with pytest.raises(IndexError, match=f"record {len(starts) + 1} of {len(starts)}"):
        index.start_of(len(starts) + 1, read)


@pytest.mark.parametrize("keep", range(0, 9))
def test_a_log_cut_anywhere_and_grown_again_finds_every_record(keep: int) -> None:
    """Cut behind the last mark, after it, or at it, then grown again: the newest records'
    ends are the new ones, never those of records the cut dropped."""
    log, starts, index = bytearray(), [], FrameIndex(0, 3)

    def read(start: int, end: int) -> bytes:
        return bytes(log[start:end])

    def add(sizes: list[int]) -> None:
        for size in sizes:
            starts.append(len(log))
            log.extend(_frame(size))
            index.add(len(log))

    add([5, 50, 7, 90, 3, 11, 4, 20])
    end = index.truncate(keep, read)
    del log[end:], starts[keep:]
    for size in (60, 2, 33, 1):
        add([size])
        assert [index.start_of(i, read) for i in range(len(starts) + 1)] == [*starts, len(log)]


def test_an_index_refuses_what_it_cannot_answer() -> None:
    with pytest.raises(ValueError, match="every must be at least 1, not 0"):
        FrameIndex(0, 0)
    index = FrameIndex(0, 3)
    for end in (30, 60, 90, 120, 150):
        index.add(end)

    def lost(start: int, end: int) -> bytes:
        return b""  # the log has lost its bytes

    # the newest records (from the last mark on) are known without reading the log
    assert [index.start_of(i, lost) for i in (3, 4, 5)] == [90, 120, 150]
    with pytest.raises(ValueError, match="no frame header at offset 0"):
        index.start_of(2, lost)
    with pytest.raises(ValueError, match="no frame header at offset 0"):
        list(iter_frames(lambda s, e: b"abc", 0, 90))


def test_frames_are_split_whole_and_iterated_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    frames = [_frame(size) for size in (0, 5, 400, 3, 1000, 2)]
    data = b"".join(frames)
    assert [bytes(f) for f in whole_frames(data)] == frames
    assert [bytes(f) for f in whole_frames(data[:-1])] == frames[:-1]  # a cut one is not whole
    monkeypatch.setattr(frame_index, "_ITER_CHUNK", 64)  # two frames are larger than a chunk
    got = [bytes(f) for f in iter_frames(lambda s, e: data[s:e], 0, len(data))]
    assert got == frames
    with pytest.raises(ValueError, match="runs past"):
        list(iter_frames(lambda s, e: data[s:e], 0, len(data) - 1))


def test_a_long_log_keeps_memory_flat_in_the_store_and_the_frame_log(tmp_path: Path) -> None:
    """20,000 more records (each in the store's log and the frame log, as a node commits
    them) add a mark every 128: a few hundred bytes, where an offset a record took 320 kB."""
    store, _ = LogStore.open(tmp_path / "data")
    frames = FrameLog(1 << 16, str(tmp_path))
    txid = 0

    def commit(count: int) -> None:
        nonlocal txid
        for _ in range(count):
            txid += 1
            record = Enqueue(txid, "q", txid, b"m" * 40)
            frame = encode_frame(record)
            store.append_frame(txid, frame)
            frames.append(txid, 0, frame)
            if txid % 100 == 0:
                store.sync()

    try:
        commit(5000)  # buffers at their working size
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        commit(20_000)
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        grown = sum(
            s.size_diff
            for s in after.compare_to(before, "filename")
            if "broker_ref" in s.traceback[0].filename
        )
        assert grown < 40_000, f"{grown} bytes more for 20,000 records"
        assert [r.txid for r in frames.records()][-3:] == [txid - 2, txid - 1, txid]
        assert frames.frames(12_345, 1)[0] == encode_frame(Enqueue(12_345, "q", 12_345, b"m" * 40))
        assert store.truncate_after(12_345) == txid - 12_345
    finally:
        store.close()
        frames.close()
    reopened, recovery = LogStore.open(tmp_path / "data")
    reopened.close()
    assert recovery.index.count == 12_345 and recovery.records[-1].txid == 12_345


@pytest.mark.parametrize("chunk", [16, 300, 1 << 20])
def test_recovery_reads_its_log_a_chunk_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    rng = random.Random(chunk)
    records = [
        Enqueue(t, "q", t, bytes(rng.randrange(256) for _ in range(rng.randrange(900))))
        for t in range(1, 400)
    ]
    store, _ = LogStore.open(tmp_path)
    for record in records:
        store.append(record)
    store.close()
    log = (tmp_path / "store.log").read_bytes()
    (tmp_path / "store.log").write_bytes(log + b"\x00\x00\x01")  # a torn tail, cut on open
    monkeypatch.setattr(log_recovery, "_CHUNK", chunk)
    monkeypatch.setattr(frame_index, "_ITER_CHUNK", chunk)
    store, recovery = LogStore.open(tmp_path)
    store.close()
    assert recovery.records == tuple(records)
    assert recovery.torn_tail is not None and recovery.torn_tail.offset == len(log)
    assert recovery.ends()[-1] == len(log) == recovery.size
    restored = FrameLog(1000, str(tmp_path))
    restored.restore(recovery)
    assert list(restored.records()) == records
    assert restored.frames(1, 1 << 30) == [encode_frame(r) for r in records]
    restored.close()
