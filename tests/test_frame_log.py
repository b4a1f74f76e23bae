"""broker_ref's frame log: appended or restored from a store's read-back, the same frames,
terms and boundaries; slices, truncation and records decoded one at a time. Each test runs
with the default in-memory tail (nothing reaches the file), and with tails so small that
most or all of the frames are in the temporary file (tests/test_frame_log_file.py has more)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker_ref.frame_log import TAIL_BYTES, FrameLog
from broker_ref.log_store import LogStore
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
    log.restore(recovery)
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
        FrameLog().restore(recovery)
    with pytest.raises(ValueError, match="holds records"):
        _appended(_history()).restore(recovery)


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


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.integers(1, 6), st.integers(0, 2)),
            st.tuples(st.just("truncate"), st.integers(-1, 12), st.just(0)),
        ),
        max_size=30,
    )
)
def test_terms_as_runs_answer_as_one_term_a_record(steps: list[tuple[str, int, int]]) -> None:
    """Runs of terms appended and cut anywhere (inside a term, at a boundary, past the end):
    every txid's term, the terms from any txid, the last term and the boundaries are what a
    plain list of one term a record says."""
    log, terms = FrameLog(64), list[int]()  # a small tail: the file's truncation is exercised too
    for kind, count, rise in steps:
        if kind == "append":
            term = (terms[-1] if terms else 1) + rise
            for _ in range(count):
                txid = len(terms) + 1
                log.append(txid, term, encode_frame(Enqueue(txid, "q", txid, b"m", term)))
                terms.append(term)
        else:
            assert log.truncate_after(count) == max(0, len(terms) - max(0, count))
            del terms[max(0, count) :]
        expected = [None, None, *terms, None, None]
        assert [log.term_at(t) for t in range(-1, len(terms) + 3)] == expected
        for txid in range(-1, len(terms) + 3):
            assert log.terms_from(txid) == terms[max(0, txid - 1) :]
        assert log.last_term() == (terms[-1] if terms else 0) and log.last_txid == len(terms)
        runs = [(t, i + 1) for i, t in enumerate(terms) if not i or terms[i - 1] != t]
        assert log.boundaries() == runs


def test_a_restored_log_with_several_terms_cut_in_one_and_at_a_boundary(tmp_path: Path) -> None:
    terms = [1, 1, 3, 3, 3, 4, 7, 7]
    records = [Enqueue(t, "q", t, b"m", term) for t, term in enumerate(terms, 1)]
    log = _restored(tmp_path, list(records), 1)
    assert [log.term_at(t) for t in range(10)] == [None, *terms, None]
    assert log.boundaries() == [(1, 1), (3, 3), (4, 6), (7, 7)]
    assert log.terms_from(4) == [3, 3, 4, 7, 7] and log.last_term() == 7
    assert log.truncate_after(7) == 1  # inside term 7: its boundary stays
    assert log.boundaries() == [(1, 1), (3, 3), (4, 6), (7, 7)] and log.last_term() == 7
    assert log.truncate_after(6) == 1  # the first record of term 7 goes, and its boundary
    assert log.boundaries() == [(1, 1), (3, 3), (4, 6)] and log.last_term() == 4
    assert log.term_at(7) is None and log.terms_from(5) == [3, 4]
    log.append(7, 4, encode_frame(Enqueue(7, "q", 7, b"m", 4)))  # the same term goes on
    assert log.boundaries() == [(1, 1), (3, 3), (4, 6)] and log.term_at(7) == 4
    log.append(8, 9, encode_frame(Enqueue(8, "q", 8, b"m", 9)))
    assert log.boundaries()[-1] == (9, 8) and log.terms_from(6) == [4, 4, 9]
