"""broker_ref's frame log: appended or restored from a store's read-back, the same frames,
terms and boundaries; slices, truncation and records decoded one at a time. Each test runs
with the default in-memory tail (nothing reaches the file), and with tails so small that
most or all of the frames are in the temporary file (tests/test_frame_log_file.py has more)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_ref.frame_log import TAIL_BYTES, FrameLog
from broker_ref.log_store import MAGIC, LogStore
from broker_ref.records import Declare, Dequeue, Enqueue, Record, Skip, encode_frame


@pytest.fixture(params=[TAIL_BYTES, 64, 1], ids=["memory", "file+tail", "file"])
def tail(request: pytest.FixtureRequest) -> int:
    size: int = request.param
    return size


def _history() -> list[Record]:
    return [
        Declare(1, "q", 1),
        Enqueue(2, "q", 1, b"one", 1),
        Enqueue(3, "q", 2, b"x" * 300, 2),
        Skip(4, 2),
        Dequeue(5, "q", 1, 4),
        Enqueue(6, "q", 3, b"", 4),
    ]


def _appended(records: list[Record], tail: int = TAIL_BYTES) -> FrameLog:
    log = FrameLog(tail)
    for record in records:
        log.append(record.txid, record.term, encode_frame(record))
    return log


def _restored(tmp_path: Path, records: list[Record], tail: int = TAIL_BYTES) -> FrameLog:
    store, _ = LogStore.open(tmp_path)
    for record in records:
        store.append(record)
    store.close()
    store, recovery = LogStore.open(tmp_path)
    store.close()
    log = FrameLog(tail)
    log.restore(recovery.data, len(MAGIC), recovery)
    return log


def test_a_restored_log_is_the_appended_one(tmp_path: Path, tail: int) -> None:
    records = _history()
    appended, restored = _appended(records, tail), _restored(tmp_path, records, tail)
    assert restored.frames(1, 1 << 30) == [encode_frame(r) for r in records]
    assert restored.frames(1, 1 << 30) == appended.frames(1, 1 << 30)
    assert restored.boundaries() == appended.boundaries() == [(1, 1), (2, 3), (4, 5)]
    assert restored.terms_from(1) == [1, 1, 2, 2, 4, 4]
    assert (restored.last_txid, restored.last_term()) == (6, 4)
    assert list(restored.records()) == records
    restored.append(7, 5, encode_frame(Dequeue(7, "q", 2, 5)))  # it goes on as appended
    assert restored.term_at(7) == 5 and restored.frames(7, 1)[0][8:]


def test_an_empty_read_back_restores_nothing(tmp_path: Path, tail: int) -> None:
    log = _restored(tmp_path, [], tail)
    assert (log.last_txid, log.frames(1, 100), list(log.records())) == (0, [], [])


def test_restore_refuses_a_log_that_holds_records_or_skips_a_txid(tmp_path: Path) -> None:
    store, _ = LogStore.open(tmp_path)
    for record in [Declare(1, "q"), Declare(3, "r")]:  # the store only asks txids to rise
        store.append(record)
    store.close()
    store, recovery = LogStore.open(tmp_path)
    store.close()
    with pytest.raises(ValueError, match="txid 3 does not follow 1"):
        FrameLog().restore(recovery.data, len(MAGIC), recovery)
    with pytest.raises(ValueError, match="holds records"):
        _appended(_history()).restore(recovery.data, len(MAGIC), recovery)


def test_slices_and_truncation_keep_frame_boundaries(tail: int) -> None:
    records = _history()
    log = _appended(records, tail)
    frames = [encode_frame(r) for r in records]
    assert log.frames(3, 1) == frames[2:3]  # at least one, whatever the size
    assert log.frames(2, len(frames[1]) + 1) == frames[1:3]
    assert log.frames(7, 100) == []
    assert log.truncate_after(3) == 3
    assert log.frames(1, 1 << 30) == frames[:3]
    assert log.boundaries() == [(1, 1), (2, 3)]
    assert list(log.records()) == records[:3]
    assert log.truncate_after(0) == 3 and log.last_txid == 0 and log.boundaries() == []
