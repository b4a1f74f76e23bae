"""Edges of the streaming checker's tally (`lab.judge.tally`) that the mutation run
(mutmut over tally.py and checker.py) found no test for."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from checker_helpers import check, drained, got, sent

from lab.judge.tally import QueueTally

GOOD = {
    "process": ["p0", "p0"],
    "type": ["invoke", "ok"],
    "f": ["send", "send"],
    "value": ["a"] * 2,
}


@pytest.mark.parametrize("column", ["type", "f"])
def test_one_unknown_type_or_function_is_a_problem(column: str) -> None:
    """An operation whose type alone, or whose function alone, is not in docs/run-folder.md breaks
    the format (a copy edited by hand can carry one the JSONL reader never would)."""
    bad = {**GOOD, column: [GOOD[column][0], "weird"]}
    assert QueueTally().add(pa.record_batch(bad)) is not None
    assert QueueTally().add(pa.record_batch(GOOD)) is None


def test_one_unexpected_and_one_resurrected_message_are_two_violations(tmp_path: Path) -> None:
    """Each kind of violation counts: one of each does not cancel the other out."""
    ops = [("p0", "invoke", "send", "a"), ("p0", "fail", "send", "a"), *got("a"), *got("ghost")]
    result = check(tmp_path, ops + drained("c0"))
    assert (result.unexpected.count, result.resurrected.count, result.lost.count) == (1, 1, 0)
    assert result.valid is False


def _batch(ops: list[tuple[str, str, str, str]]) -> pa.RecordBatch:
    process, kind, function, value = (list(column) for column in zip(*ops, strict=True))
    return pa.record_batch({"process": process, "type": kind, "f": function, "value": value})


def test_a_second_senders_open_send_moves_with_a_block_that_is_not_the_first() -> None:
    """p2's block of codes starts after p1's; when a later batch makes it grow (it moves to
    the end of the code space), a second sender's unfinished send of p2-5 moves with it, so
    p2-5, refused to its first sender, stays indeterminate rather than failed."""
    tally = QueueTally()
    first = [("p1", "invoke", "send", "p1-1"), ("p1", "ok", "send", "p1-1")]
    first += [("p2", "invoke", "send", "p2-5"), ("p9", "invoke", "send", "p2-5")]
    first += [("p2", "fail", "send", "p2-5")]
    assert tally.add(_batch(first)) is None
    grow = [("p2", "invoke", "send", "p2-5000"), ("p2", "ok", "send", "p2-5000")]
    assert tally.add(_batch(grow)) is None
    result = tally.result()
    assert (result.indeterminate, result.failed, result.acknowledged) == (1, 0, 2)


def test_more_ids_than_listed_give_the_smallest_in_order(tmp_path: Path) -> None:
    """Past MAX_IDS (1000) a set lists its smallest ids, sorted, and counts them all."""
    values = [f"p0-{n}" for n in range(1, 1003)]
    ops = [op for value in values for op in sent(value)]
    result = check(tmp_path, ops + drained("c0"))
    assert result.lost.count == 1002
    assert list(result.lost.ids) == sorted(values)[:1000]


def test_a_block_that_grows_leaves_the_next_blocks_second_senders_alone() -> None:
    """p3's block begins where p2's ends: p2's block moving away takes none of p3's state."""
    tally = QueueTally()
    first = [("p1", "invoke", "send", "p1-1"), ("p1", "ok", "send", "p1-1")]
    first += [("p2", "invoke", "send", "p2-5"), ("p2", "ok", "send", "p2-5")]
    first += [("p3", "invoke", "send", "p3-0"), ("p9", "invoke", "send", "p3-0")]
    first += [("p3", "fail", "send", "p3-0")]
    assert tally.add(_batch(first)) is None
    grow = [("p2", "invoke", "send", "p2-5000"), ("p2", "ok", "send", "p2-5000")]
    assert tally.add(_batch(grow)) is None
    result = tally.result()
    assert (result.indeterminate, result.failed, result.acknowledged) == (1, 0, 3)
