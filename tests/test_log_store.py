"""broker_ref's storage: records, the log store, group commit, queues and the message codec."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from proton import Message

from broker_ref.commit import GroupCommit
from broker_ref.errors import StoreError
from broker_ref.log_store import LOG_FILE_NAME, MAGIC, LogStore
from broker_ref.message_codec import delivery_count, mark_redelivered
from broker_ref.queues import Queue, QueueBook, QueuedMessage
from broker_ref.records import Declare, Dequeue, Enqueue, decode_payload, encode_frame

# ---- unit tests: records and the log store ------------------------------------------------------


def _records() -> list[Declare | Enqueue | Dequeue]:
    return [
        Declare(1, "q"),
        Enqueue(2, "q", 1, b"one"),
        Enqueue(3, "q", 2, b"two"),
        Dequeue(4, "q", 1),
        Declare(5, "other-é"),
        Enqueue(6, "other-é", 1, b""),
    ]


def test_every_record_kind_survives_encoding() -> None:
    for record in _records():
        frame = encode_frame(record)
        assert decode_payload(frame[8:]) == record


def test_log_store_reads_back_what_was_synced(tmp_path: Path) -> None:
    store, recovery = LogStore.open(tmp_path)
    assert recovery.records == () and recovery.torn_tail is None
    for record in _records():
        store.append(record)
    assert store.durable_txid == 0 and store.has_unsynced
    assert store.sync() == 6
    store.close()
    store, recovery = LogStore.open(tmp_path)
    assert list(recovery.records) == _records()
    assert recovery.torn_tail is None
    assert store.next_txid == 7 and store.durable_txid == 6
    store.close()


def test_log_store_refuses_a_txid_that_does_not_rise(tmp_path: Path) -> None:
    store, _ = LogStore.open(tmp_path)
    store.append(Declare(1, "q"))
    with pytest.raises(StoreError, match="does not follow"):
        store.append(Declare(1, "q"))
    store.close()


def _write_log(tmp_path: Path) -> bytes:
    store, _ = LogStore.open(tmp_path)
    for record in _records():
        store.append(record)
    store.close()
    return (tmp_path / LOG_FILE_NAME).read_bytes()


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda log: log + b"\x00\x00\x00\x05crc!garbage", "CRC mismatch"),
        (lambda log: log + b"\x00\x00", "frame header cut short"),
        (lambda log: log[:-3], "frame runs past the end"),
        (lambda log: log[:-1] + bytes([log[-1] ^ 0xFF]), "CRC mismatch"),
        (lambda log: log + b"\xff\xff\xff\xff\x00\x00\x00\x00", "frame runs past the end"),
    ],
    ids=["garbage", "partial-header", "partial-frame", "flipped-bit", "huge-length"],
)
def test_torn_tail_is_cut_at_the_last_complete_record(
    tmp_path: Path, damage: Callable[[bytes], bytes], reason: str
) -> None:
    log = _write_log(tmp_path)
    damaged = damage(log)
    (tmp_path / LOG_FILE_NAME).write_bytes(damaged)
    store, recovery = LogStore.open(tmp_path)
    assert recovery.torn_tail is not None
    assert reason in recovery.torn_tail.reason
    kept = len(_records()) if len(damaged) > len(log) else len(_records()) - 1
    assert list(recovery.records) == _records()[:kept]
    store.append(Enqueue(store.next_txid, "q", 9, b"after"))
    store.close()
    store, recovery = LogStore.open(tmp_path)
    assert recovery.torn_tail is None
    assert recovery.records[-1] == Enqueue(kept + 1, "q", 9, b"after")
    store.close()


def test_log_store_keeps_one_node_per_data_dir(tmp_path: Path) -> None:
    store, _ = LogStore.open(tmp_path)
    with pytest.raises(StoreError, match="in use"):
        LogStore.open(tmp_path)
    store.close()
    LogStore.open(tmp_path)[0].close()


def test_log_store_refuses_a_file_that_is_not_a_log(tmp_path: Path) -> None:
    (tmp_path / LOG_FILE_NAME).write_bytes(b"something else entirely")
    with pytest.raises(StoreError, match="not a broker_ref log"):
        LogStore.open(tmp_path)


def test_log_store_recreates_a_log_whose_header_was_torn(tmp_path: Path) -> None:
    (tmp_path / LOG_FILE_NAME).write_bytes(MAGIC[:3])
    store, recovery = LogStore.open(tmp_path)
    assert recovery.records == ()
    assert recovery.torn_tail is not None and recovery.torn_tail.dropped_bytes == 3
    store.close()
    assert (tmp_path / LOG_FILE_NAME).read_bytes() == MAGIC


def test_a_failed_write_is_continued_by_the_next_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = LogStore.open(tmp_path)
    real_write = os.write
    calls: list[int] = []

    def half_then_disk_full(fd: int, data: Any) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data)[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    for record in _records():
        store.append(record)
    monkeypatch.setattr(os, "write", half_then_disk_full)
    with pytest.raises(StoreError, match="No space left"):
        store.sync()
    assert store.durable_txid == 0 and store.has_unsynced
    monkeypatch.setattr(os, "write", real_write)
    assert store.sync() == 6
    store.close()
    store, recovery = LogStore.open(tmp_path)
    assert list(recovery.records) == _records() and recovery.torn_tail is None
    store.close()


def test_group_commit_makes_a_batch_durable_with_one_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs: list[int] = []
    real_fdatasync = os.fdatasync

    def counting_fdatasync(fd: int) -> None:
        syncs.append(fd)
        real_fdatasync(fd)

    monkeypatch.setattr(os, "fdatasync", counting_fdatasync)
    store, _ = LogStore.open(tmp_path)
    commit: GroupCommit[str] = GroupCommit(store, coalescing=True)
    commit.stage(Declare(commit.next_txid, "q"))
    for seq in range(1, 11):
        commit.stage(Enqueue(commit.next_txid, "q", seq, b"m"), f"waiter-{seq}")
    assert store.durable_txid == 0
    committed = commit.commit()
    assert len(syncs) == 1
    assert [waiter for _, waiter in committed] == [None] + [f"waiter-{s}" for s in range(1, 11)]
    assert store.durable_txid == 11 and not commit.pending
    assert commit.commit() == [] and len(syncs) == 1
    store.close()


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.integers(1, 5), st.sampled_from([1, 1, 1, 2, 7])),
            st.tuples(st.just("truncate"), st.integers(-1, 40), st.just(0)),
            st.tuples(st.just("sync"), st.just(0), st.just(0)),
        ),
        max_size=25,
    )
)
def test_truncation_keeps_exactly_the_records_up_to_the_txid(
    steps: list[tuple[str, int, int]],
) -> None:
    """Txids in one run, as the broker writes them, or with gaps (the store asks only that
    they rise), cut anywhere, buffered or written: the store keeps exactly the records up to
    the txid, goes on after them, and reads them back."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        store, _ = LogStore.open(Path(tmp))
        held: list[int] = []
        for kind, count, step in steps:
            if kind == "append":
                for _ in range(count):
                    store.append(Declare(store.last_txid + step, "q"))
                    held.append(store.last_txid)
            elif kind == "truncate":
                kept = [txid for txid in held if txid <= count]
                assert store.truncate_after(count) == len(held) - len(kept)
                held = kept
            else:
                store.sync()
            assert store.last_txid == (held[-1] if held else 0)
        store.close()
        store, recovery = LogStore.open(Path(tmp))
        assert [r.txid for r in recovery.records] == held
        half = len(held) // 2  # a cut in the log as read back
        assert store.truncate_after(held[half - 1] if half else 0) == len(held) - half
        assert store.last_txid == (held[half - 1] if half else 0)
        store.close()


def test_a_reopened_log_is_cut_and_continued_where_its_records_end(tmp_path: Path) -> None:
    _write_log(tmp_path)
    store, _ = LogStore.open(tmp_path)
    assert store.truncate_after(9) == 0 and store.truncate_after(4) == 2
    assert store.next_txid == 5 and store.durable_txid == 4
    store.append(Enqueue(5, "q", 3, b"three"))
    store.close()
    store, recovery = LogStore.open(tmp_path)
    assert list(recovery.records) == [*_records()[:4], Enqueue(5, "q", 3, b"three")]
    assert store.truncate_after(0) == 5 and store.next_txid == 1
    store.close()
    assert (tmp_path / LOG_FILE_NAME).read_bytes() == MAGIC


# ---- unit tests: queues -----------------------------------------------------------------------


def test_queue_hands_out_in_order_and_takes_returns_in_front() -> None:
    queue = Queue("q")
    for seq in range(1, 6):
        queue.push(QueuedMessage(queue.allocate_seq(), f"m{seq}".encode()))
    first, second, third = queue.take(), queue.take(), queue.take()
    assert first and second and third and queue.unacked == 3 and queue.depth == 2
    queue.give_back(third)
    queue.acknowledge(second)
    queue.give_back(first)
    assert [m.seq for m in queue.waiting()] == [1, 3, 4, 5]
    assert queue.depth == 4 and queue.unacked == 0
    assert [m.seq for m in iter(queue.take, None)] == [1, 3, 4, 5]
    assert not queue.has_waiting


def test_queue_book_recovers_declared_queues_and_live_messages() -> None:
    book = QueueBook.recover(
        [
            Declare(1, "empty"),
            Declare(2, "q"),
            Enqueue(3, "q", 1, b"a"),
            Enqueue(4, "q", 2, b"b"),
            Enqueue(5, "q", 3, b"c"),
            Dequeue(6, "q", 2),
        ]
    )
    stats = book.stats()
    assert {name: (s.depth, s.unacked) for name, s in stats.items()} == {
        "empty": (0, 0),
        "q": (2, 0),
    }
    queue = book.get("q")
    assert queue is not None
    assert [(m.seq, m.body) for m in queue.waiting()] == [(1, b"a"), (3, b"c")]
    assert queue.allocate_seq() == 4
    assert book.message_count == 2


# ---- unit tests: message codec --------------------------------------------------------------


def test_a_redelivery_adds_one_to_the_delivery_count() -> None:
    body = bytes(Message(id="m1", body="x", durable=True).encode())
    again = mark_redelivered(mark_redelivered(body))
    assert delivery_count(body) == 0 and delivery_count(again) == 2
    decoded = Message()
    decoded.decode(again)
    assert decoded.id == "m1" and decoded.body == "x" and decoded.durable
