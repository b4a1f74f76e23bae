"""The streaming checker agrees with a plain set-based reference written from docs/run-folder.md,
whatever the ids look like, however the history is cut into batches, from JSONL or Parquet."""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from checker_helpers import Op, drained, sent, write_history
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.judge.check_result import MAX_IDS, CheckResult, IdSet, verdict
from lab.judge.checker import check_path, check_table, read_history
from lab.judge.columnar import write_columnar_copies
from lab.judge.message_ids import MessageIds


def reference(ops: list[Op]) -> CheckResult:
    """The queue checker of docs/run-folder.md with Python sets, one operation at a time."""
    attempted: set[str] = set()
    acknowledged: set[str] = set()
    info: set[str] = set()
    refused: set[str] = set()
    received: Counter[str] = Counter()
    still_open: Counter[tuple[str, str]] = Counter()
    last_drain: dict[str, str] = {}
    for process, kind, function, value in ops:
        if function == "send":
            assert value is not None
            attempted.add(value)
            {"ok": acknowledged, "info": info, "fail": refused}.get(kind, set()).add(value)
            still_open[process, value] += 1 if kind == "invoke" else -1
        elif function == "receive" and kind == "ok":
            assert value is not None
            received[value] += 1
        elif function == "drain":
            last_drain[process] = kind
    unfinished = {value for (_, value), count in still_open.items() if count > 0}
    indeterminate = (info | unfinished) - acknowledged
    failed = refused - acknowledged - indeterminate
    got = set(received)
    lost, unexpected, resurrected = acknowledged - got, got - attempted, got & failed
    drained = bool(last_drain) and all(kind == "ok" for kind in last_drain.values())

    def first(values: set[str]) -> IdSet:
        ordered = sorted(values, key=lambda text: text.encode("utf-8"))
        return IdSet(count=len(values), ids=tuple(ordered[:MAX_IDS]))

    return CheckResult(
        valid=verdict(
            lost=len(lost), violations=len(unexpected) + len(resurrected), drained=drained
        ),
        attempted=len(attempted),
        acknowledged=len(acknowledged),
        failed=len(failed),
        indeterminate=len(indeterminate),
        received=len(got),
        lost=first(lost),
        unexpected=first(unexpected),
        resurrected=first(resurrected),
        recovered=first(got & indeterminate),
        duplicated=first({value for value, count in received.items() if count > 1}),
        duplicate_deliveries=sum(received.values()) - len(got),
    )


def rebatched(table: pa.Table, rows: int) -> pa.Table:
    return pa.Table.from_batches(table.to_batches(max_chunksize=rows), table.schema)


shaped_ids = st.builds(
    "{}-{}".format,
    st.sampled_from(["p0", "p1", "c3", "u", "é", "prod_07"]),
    st.one_of(st.integers(0, 40), st.integers(0, 5000), st.integers(0, 10**19)),
)
odd_ids = st.sampled_from(
    ["ghost", "p0-007", "p0-", "-3", "p0-1x", "producer-12", "12345678", "x-123456789", "a-b-2"]
)
message_ids = st.one_of(shaped_ids, shaped_ids, odd_ids)
operations = st.tuples(
    st.sampled_from(["p0", "p1", "c0", "c1"]),
    st.sampled_from(["invoke", "ok", "fail", "info"]),
    st.sampled_from(["send", "send", "receive", "receive", "drain"]),
    message_ids,
).map(lambda op: (op[0], op[1], op[2], None if op[2] == "drain" else op[3]))


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(operations, max_size=250), batch=st.integers(1, 64))
def test_streaming_agrees_with_the_reference(
    tmp_path_factory: pytest.TempPathFactory, ops: list[Op], batch: int
) -> None:
    path = write_history(tmp_path_factory.mktemp("history"), ops)
    expected = reference(ops)
    assert check_path(path) == expected
    table = read_history(path)
    assert check_table(rebatched(table, batch)) == expected


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32), batch=st.sampled_from([97, 1000, 100_000]))
def test_big_histories_cut_anywhere_agree(
    tmp_path_factory: pytest.TempPathFactory, seed: int, batch: int
) -> None:
    """Sequence numbers in the thousands make the id blocks grow and move between batches."""
    rng = random.Random(seed)
    ops: list[Op] = []
    for _ in range(6000):
        value = f"p{rng.randrange(3)}-{rng.choice([rng.randrange(9000), rng.randrange(10**9)])}"
        if rng.random() < 0.05:
            value = rng.choice(["ghost", "p1-0042", "x"])
        function = rng.choice(["send", "send", "receive", "drain"])
        kind = rng.choice(["invoke", "ok", "ok", "fail", "info"])
        ops.append((rng.choice(["p0", "p1", "c0"]), kind, function, value))
    ops = [(p, k, f, None if f == "drain" else v) for p, k, f, v in ops]
    folder = tmp_path_factory.mktemp("run")
    write_history(folder, ops)
    expected = reference(ops)
    table = read_history(folder / "history.jsonl")
    assert check_table(rebatched(table, batch)) == expected
    write_columnar_copies(folder)
    assert check_path(folder) == expected


def test_a_fresh_copy_is_read_and_a_stale_one_is_not(tmp_path: Path) -> None:
    sent: list[Op] = [("p0", "invoke", "send", "p0-1"), ("p0", "ok", "send", "p0-1")]
    history = write_history(tmp_path, [*sent, ("c0", "ok", "receive", "p0-1")])
    write_columnar_copies(tmp_path)
    copy = tmp_path / "history.parquet"
    # The same number of bytes, another message received: only the copy still says p0-1.
    write_history(tmp_path, [*sent, ("c0", "ok", "receive", "p0-2")])
    older = copy.stat().st_mtime_ns - 1_000_000_000
    os.utime(history, ns=(older, older))
    assert check_path(tmp_path).lost.count == 0
    os.utime(history)  # now the JSONL is newer than its copy: the copy is stale
    assert check_path(tmp_path).lost.ids == ("p0-1",)
    with history.open("a") as more:
        more.write('{"index": 3, "time": 40, "process": "c0", "type": "ok", "f": "receive"')
    os.utime(history, ns=(older, older))  # older, but its size is not the recorded one
    assert check_path(tmp_path).lost.ids == ("p0-1",)


def test_ids_round_trip_through_their_codes() -> None:
    texts = ["p0-0", "p0-10", "p0-12345678", "p0-123456789012", "p0-007", "p0-", "-5", "5"]
    texts += ["ghost", "abcdefgh-3", "abcdefg-3", "é-4", "p0-1x", "p0-0", "12-34", "a-b-7"]
    texts += ["p0-99999999999999999999", "p0-999999999999999999", "p2-7"]
    ids = MessageIds()
    first, _ = ids.encode(pa.array(texts[:5]), np.ones(5, bool))
    codes, _ = ids.encode(pa.array(texts), np.ones(len(texts), bool))
    assert ids.decode(codes).to_pylist() == texts
    assert codes[:5].tolist() == first.tolist()
    assert len(set(codes.tolist())) == len(set(texts))


def test_codes_stay_dense_for_sequence_numbers() -> None:
    ids = MessageIds()
    for start in range(0, 200_000, 50_000):
        values = pa.array([f"p{n % 4}-{n // 4}" for n in range(start, start + 50_000)])
        codes, _ = ids.encode(values, np.ones(len(values), bool))
    assert ids.size <= 2 * 200_000
    assert ids.decode(codes[-3:]).to_pylist() == ["p1-49999", "p2-49999", "p3-49999"]


def _judged(tmp_path: Path, ops: list[Op], batch: int) -> CheckResult:
    """The streaming verdict of `ops` cut into batches of `batch` rows; it must agree with
    the reference too."""
    table = read_history(write_history(tmp_path, ops))
    result = check_table(rebatched(table, batch))
    assert result == reference(ops)
    return result


def test_a_second_sender_counts_each_of_its_sends(tmp_path: Path) -> None:
    """p1 re-sends p0's refused message twice and completes once: one of its sends is still
    open, so the message is indeterminate, not failed."""
    ops: list[Op] = [("p0", "invoke", "send", "p0-1"), ("p0", "fail", "send", "p0-1")]
    ops += [("p1", "invoke", "send", "p0-1")] * 2 + [("p1", "fail", "send", "p0-1")]
    result = _judged(tmp_path, ops, batch=2)  # p0's two sends come first, alone
    assert (result.indeterminate, result.failed) == (1, 0)


def test_a_second_senders_open_send_follows_its_message_when_the_block_moves(
    tmp_path: Path,
) -> None:
    """p0-0 is the first code of p0's block; p0-1500 makes the block move two batches after
    p1's open send of p0-0, which must move with it. (Within one batch the last sender of a
    new message becomes its first, so p0's sends go in a batch of their own.)"""
    ops: list[Op] = [("p0", "invoke", "send", "p0-0"), ("p0", "fail", "send", "p0-0")]
    ops += [("p1", "invoke", "send", "p0-0"), ("c0", "invoke", "receive", None)]
    ops += [*sent("p0-1500"), ("c0", "ok", "receive", "p0-1500")]
    result = _judged(tmp_path, ops, batch=2)
    assert (result.indeterminate, result.failed, result.lost.count) == (1, 0, 0)


@pytest.mark.parametrize(
    ("drains", "expected"),
    [
        # c0's drain never ended: the last drain overall (p0's ok) must not speak for it.
        ([("c0", "invoke", "drain", None), *drained("p0")], "unknown"),
        # c0's last drain is its ok; p0's only drain is ok.
        (
            [
                ("c0", "invoke", "drain", None),
                ("c0", "ok", "drain", None),
                ("p0", "ok", "drain", None),
            ],
            False,
        ),
        # p0 drained once in vain, then for good.
        ([*drained("p0", end="fail"), *drained("p0")], False),
    ],
)
def test_each_process_is_judged_by_its_last_drain(
    tmp_path: Path, drains: list[Op], expected: object
) -> None:
    """One acknowledged message nobody received: lost for sure only when every process's
    last drain ended ok."""
    result = _judged(tmp_path, [*sent("p0-1"), *drains], batch=100)
    assert result.lost.ids == ("p0-1",)
    assert result.valid == expected
