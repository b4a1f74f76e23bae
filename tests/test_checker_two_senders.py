"""One message id sent by two processes (a re-send after a producer restarted under another
name): the id stays in doubt while either sender has an invocation without an answer."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from checker_helpers import Op, drained, got, write_history

from lab.ground.errors import InputError
from lab.judge.checker import check_path, check_table


def _refused(value: str, process: str) -> list[Op]:
    return [(process, "invoke", "send", value), (process, "fail", "send", value)]


def test_an_id_another_sender_left_open_is_indeterminate_not_refused(tmp_path: Path) -> None:
    ops: list[Op] = [
        *_refused("m-1", "p1"),
        ("p2", "invoke", "send", "m-1"),  # never answered
        *drained("c0"),
    ]
    result = check_path(write_history(tmp_path, ops))
    assert (result.failed, result.indeterminate) == (0, 1)
    assert result.resurrected.count == 0


def test_an_id_every_sender_answered_is_refused(tmp_path: Path) -> None:
    ops: list[Op] = [*_refused("m-1", "p1"), *_refused("m-1", "p2"), *drained("c0")]
    result = check_path(write_history(tmp_path, ops))
    assert (result.failed, result.indeterminate) == (1, 0)


def test_a_delivered_id_a_second_sender_left_open_is_recovered(tmp_path: Path) -> None:
    """Two invocations by p2 and one answer: one is still open, so the id is in doubt;
    delivered, the message is recovered, not resurrected."""
    ops: list[Op] = [
        *_refused("m-1", "p1"),
        ("p2", "invoke", "send", "m-1"),
        ("p2", "invoke", "send", "m-1"),
        ("p2", "fail", "send", "m-1"),
        *got("m-1"),
        *drained("c0"),
    ]
    result = check_path(write_history(tmp_path, ops))
    assert (result.failed, result.indeterminate) == (0, 1)
    assert (result.recovered.ids, result.resurrected.count) == (("m-1",), 0)


def test_a_table_with_a_missing_field_is_refused_naming_the_table() -> None:
    table = pa.table(
        {
            "index": pa.array([0], pa.int64()),
            "time": pa.array([0], pa.int64()),
            "process": pa.array([None], pa.string()),
            "type": pa.array(["invoke"]),
            "f": pa.array(["send"]),
            "value": pa.array(["m-1"]),
        }
    )
    with pytest.raises(InputError, match=r"^history table: a field is missing or out of range$"):
        check_table(table)
