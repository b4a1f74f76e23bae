"""broker_ref's frame log on its temporary file: frames flushed from the in-memory tail to
the file stay byte-exact whether a slice is read from the file, the tail or both, across
truncation, restore and a reader thread racing the appender; the file is anonymous, in
the directory given, and closed with the log; a directory it cannot write to leaves the
frames in memory."""

from __future__ import annotations

import os
import random
import resource
import signal
import threading
import time
from pathlib import Path

import pytest

from broker_ref import frame_index
from broker_ref.frame_log import FrameLog
from broker_ref.log_store import LogStore
from broker_ref.records import Enqueue, Record, encode_frame

_SIZE = len(encode_frame(Enqueue(1, "q", 1, b"x" * 50, 1)))  # every `_record` frame's size


def _record(txid: int, term: int = 1) -> Record:
    return Enqueue(txid, "q", txid, bytes([txid % 256]) * 50, term)


def _varied(count: int, seed: int = 7) -> list[Record]:
    """Records of sizes from a few bytes to a few hundred, with terms rising now and then."""
    rng = random.Random(seed)
    records: list[Record] = []
    term = 1
    for txid in range(1, count + 1):
        term += rng.random() < 0.05
        records.append(Enqueue(txid, "q", txid, rng.randbytes(rng.randrange(0, 400)), term))
    return records


def _fill(log: FrameLog, records: list[Record]) -> None:
    for record in records:
        log.append(record.txid, record.term, encode_frame(record))


def _expected(frames: list[bytes], first: int, max_bytes: int) -> list[bytes]:
    """What `FrameLog.frames` answers, from a plain list: at least one, up to max_bytes."""
    out: list[bytes] = []
    for frame in frames[first - 1 :]:
        out.append(frame)
        if sum(map(len, out)) >= max_bytes:
            break
    return out


def _file_in(directory: Path) -> Path | None:
    """This process's open descriptor on a file in `directory`, if any (/proc/self/fd/N)."""
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith(f"{directory}/"):
            return Path(f"/proc/self/fd/{name}")
    return None


def _file_size(directory: Path) -> int:
    found = _file_in(directory)
    assert found is not None, "no frame log file open"
    return found.stat().st_size


def test_frames_flushed_past_the_tail_are_in_an_anonymous_file(tmp_path: Path) -> None:
    log = FrameLog(10 * _SIZE, str(tmp_path))  # the tail goes as it fills: every ten records
    _fill(log, [_record(txid) for txid in range(1, 10)])
    assert _file_in(tmp_path) is None  # nothing past the tail yet: no file at all
    _fill(log, [_record(txid) for txid in range(10, 26)])
    assert _file_size(tmp_path) == 20 * _SIZE  # two tails went; five records are in memory
    assert os.listdir(tmp_path) == []  # unlinked: nothing left behind by a killed node
    assert log.frames(1, 1 << 30) == [encode_frame(_record(txid)) for txid in range(1, 26)]
    log.close()
    assert _file_in(tmp_path) is None and log.frames(1, 1 << 30) == []


@pytest.mark.parametrize("tail", [1, 100, 1000, 5000])
def test_every_slice_is_the_frames_whatever_part_is_in_the_file(tail: int) -> None:
    records = _varied(120)
    frames = [encode_frame(r) for r in records]
    log = FrameLog(tail)
    _fill(log, records)
    for first in range(1, len(frames) + 2):
        for max_bytes in (0, 1, 150, 999, 4096, 1 << 30):
            assert log.frames(first, max_bytes) == _expected(frames, first, max_bytes)
    assert list(log.records()) == records
    assert log.terms_from(1) == [r.term for r in records]


def test_truncation_inside_the_tail_then_inside_the_file(tmp_path: Path) -> None:
    log = FrameLog(10 * _SIZE, str(tmp_path))
    _fill(log, [_record(txid) for txid in range(1, 26)])  # 20 in the file, 5 in the tail
    assert log.truncate_after(22) == 3
    assert _file_size(tmp_path) == 20 * _SIZE
    assert log.frames(18, 1 << 30) == [encode_frame(_record(t)) for t in range(18, 23)]
    assert log.truncate_after(13) == 9  # into the file: it is cut there
    assert _file_size(tmp_path) == 13 * _SIZE
    assert log.frames(12, 1 << 30) == [encode_frame(_record(12)), encode_frame(_record(13))]
    # A new history from 14 on, in a later term: where the old frames were, the new ones are.
    _fill(log, [_record(txid, term=2) for txid in range(14, 40)])
    assert _file_size(tmp_path) == 33 * _SIZE  # 13 + 2 tails (the second of 10 records)
    expected = [_record(t) for t in range(1, 14)] + [_record(t, 2) for t in range(14, 40)]
    assert log.frames(1, 1 << 30) == [encode_frame(r) for r in expected]
    assert list(log.records()) == expected
    assert log.boundaries() == [(1, 1), (2, 14)]
    assert log.truncate_after(0) == 39 and _file_size(tmp_path) == 0
    assert log.frames(1, 1 << 30) == [] and log.last_txid == 0


@pytest.mark.parametrize("tail", [1, 4 * _SIZE, 1 << 20])
def test_a_restored_log_goes_on_across_flushes(tmp_path: Path, tail: int) -> None:
    records = _varied(300)
    store, _ = LogStore.open(tmp_path / "data")
    for record in records[:200]:
        store.append(record)
    store.close()
    store, recovery = LogStore.open(tmp_path / "data")
    store.close()
    log = FrameLog(tail, str(tmp_path))
    log.restore(recovery)
    restored = sum(len(encode_frame(r)) for r in records[:200])
    if restored >= tail:  # written to the file a chunk at a time
        assert _file_size(tmp_path) == restored
    else:
        assert _file_in(tmp_path) is None
    _fill(log, records[200:])
    frames = [encode_frame(r) for r in records]
    assert log.frames(1, 1 << 30) == frames
    assert log.frames(190, 2000) == _expected(frames, 190, 2000)  # restored, then appended
    assert list(log.records()) == records
    assert log.last_term() == records[-1].term and log.term_at(250) == records[249].term


def test_records_are_read_a_chunk_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frame_index, "_ITER_CHUNK", 300)  # some records are larger than a chunk
    records = _varied(200)
    log = FrameLog(300)
    _fill(log, records)
    assert list(log.records()) == records


def test_a_directory_it_cannot_write_leaves_the_frames_in_memory(tmp_path: Path) -> None:
    records = _varied(50)
    log = FrameLog(100, str(tmp_path / "missing"))
    _fill(log, records)
    assert log.frames(1, 1 << 30) == [encode_frame(r) for r in records]
    assert log.truncate_after(30) == 20
    assert list(log.records()) == records[:30]


def test_a_full_temporary_disk_keeps_the_frames_in_memory_until_it_has_room(
    tmp_path: Path,
) -> None:
    records = _varied(200)
    frames = [encode_frame(r) for r in records]
    log = FrameLog(1000, str(tmp_path))
    # A file size limit stands for a full disk: the write that crosses it is cut short, the
    # next one fails (EFBIG; the signal that comes with it is ignored meanwhile).
    ignored = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (5000, hard))
    try:
        _fill(log, records[:100])
        assert _file_size(tmp_path) == 5000
        for first in (1, 20, 60, 100):
            assert log.frames(first, 3000) == _expected(frames[:100], first, 3000)
        assert log.truncate_after(90) == 10
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, ignored)
    _fill(log, records[90:])  # room again: what waited in memory goes at the next flush
    assert _file_size(tmp_path) > sum(map(len, frames[:100]))
    assert log.frames(1, 1 << 30) == frames
    assert list(log.records()) == records


def test_a_reader_racing_the_appender_and_rollbacks_reads_exact_frames(tmp_path: Path) -> None:
    records = _varied(3000, seed=11)
    frames = [encode_frame(r) for r in records]
    log = FrameLog(2048, str(tmp_path))  # a flush every few records
    done = threading.Event()
    problems: list[str] = []
    reads = 0

    def read() -> None:
        nonlocal reads
        rng = random.Random(3)
        while not done.is_set() or reads == 0:
            last = log.last_txid
            if last == 0:
                continue
            first = rng.randrange(1, last + 1)
            try:
                got = log.frames(first, rng.choice((1, 500, 8192, 1 << 20)))
            except Exception as exc:  # a failed read is a finding too, not a dead thread
                problems.append(f"frames({first}): {exc!r}")
                return
            reads += 1
            for txid, frame in enumerate(got, first):
                if frame != frames[txid - 1]:
                    problems.append(f"txid {txid}: {frame[:16]!r}… is not its frame")
                    return

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for record, frame in zip(records, frames, strict=True):
            log.append(record.txid, record.term, frame)
            if record.txid % 10 == 0:
                time.sleep(0)  # let the reader in between appends
            if record.txid % 500 == 0:  # a rollback, into the file, and the same again
                log.truncate_after(record.txid - 300)
                _fill(log, records[record.txid - 300 : record.txid])
    finally:
        done.set()
        reader.join()
    assert problems == []
    assert log.frames(1, 1 << 30) == frames
