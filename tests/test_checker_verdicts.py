"""The queue checker's verdicts and counts (docs/run-folder.md) on hand-written histories."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from checker_helpers import Op, check, drained, got, sent, write_history

import lab.judge.checker
from lab.judge.checker import CheckResult, IdSet, check_path, read_history


def ids(*values: str) -> IdSet:
    return IdSet(count=len(values), ids=values)


NONE = IdSet(count=0, ids=())


def test_public_names() -> None:
    assert sorted(lab.judge.checker.__all__) == [
        "CheckResult",
        "IdSet",
        "check_path",
        "check_table",
        "read_history",
    ]


def test_empty_file_is_a_valid_empty_history(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"")
    assert read_history(path).num_rows == 0
    assert check_path(path).to_json() == {
        "valid": True,
        "attempted": 0,
        "acknowledged": 0,
        "failed": 0,
        "indeterminate": 0,
        "received": 0,
        "lost": {"count": 0, "ids": []},
        "unexpected": {"count": 0, "ids": []},
        "resurrected": {"count": 0, "ids": []},
        "recovered": {"count": 0, "ids": []},
        "duplicated": {"count": 0, "ids": []},
        "duplicate_deliveries": 0,
    }


def test_json_keys_in_the_documented_order(tmp_path: Path) -> None:
    result = check(tmp_path, sent("a") + got("b") + drained("c0"))
    assert list(result.to_json()) == [
        "valid",
        "attempted",
        "acknowledged",
        "failed",
        "indeterminate",
        "received",
        "lost",
        "unexpected",
        "resurrected",
        "recovered",
        "duplicated",
        "duplicate_deliveries",
    ]
    assert result.to_json()["lost"] == {"count": 1, "ids": ["a"]}


def test_every_message_delivered_once_is_valid(tmp_path: Path) -> None:
    ops = sent("a", "p0") + sent("b", "p1") + got("b", "c0") + got("a", "c1")
    result = check(tmp_path, ops + drained("c0", "c1"))
    assert result == CheckResult(
        valid=True,
        attempted=2,
        acknowledged=2,
        failed=0,
        indeterminate=0,
        received=2,
        lost=NONE,
        unexpected=NONE,
        resurrected=NONE,
        recovered=NONE,
        duplicated=NONE,
        duplicate_deliveries=0,
    )


def test_run_directory_reads_its_history(tmp_path: Path) -> None:
    write_history(tmp_path, sent("a") + got("a") + drained("c0"))
    assert check_path(tmp_path).received == 1


def test_lost_after_a_full_drain_is_invalid(tmp_path: Path) -> None:
    result = check(tmp_path, sent("a") + sent("b") + got("a") + drained("c0", "c1"))
    assert result.valid is False
    assert result.lost == ids("b")


@pytest.mark.parametrize(
    "drains",
    [
        pytest.param([], id="nobody-drained"),
        pytest.param(drained("c0", end="info"), id="drain-info"),
        pytest.param(drained("c0", end="fail"), id="drain-fail"),
        pytest.param([("c0", "invoke", "drain", None)], id="drain-unfinished"),
        pytest.param(drained("c0") + drained("c1", end="fail"), id="one-of-two-failed"),
        pytest.param(drained("c0") + drained("c0", end="info"), id="ok-then-info"),
    ],
)
def test_lost_without_a_full_drain_is_unknown(tmp_path: Path, drains: list[Op]) -> None:
    result = check(tmp_path, sent("a") + sent("b") + got("a") + drains)
    assert result.valid == "unknown"
    assert result.lost == ids("b")


def test_a_drain_retried_to_ok_counts_as_drained(tmp_path: Path) -> None:
    drains = drained("c0", end="info") + drained("c0")
    result = check(tmp_path, sent("a") + sent("b") + got("a") + drains)
    assert result.valid is False


def test_unfinished_drain_without_loss_is_valid(tmp_path: Path) -> None:
    result = check(tmp_path, sent("a") + got("a") + drained("c0", end="info"))
    assert result.valid is True


def test_unexpected_is_invalid_even_when_a_drain_failed(tmp_path: Path) -> None:
    ops = sent("a") + sent("b") + got("a") + got("ghost") + drained("c0", end="fail")
    result = check(tmp_path, ops)
    assert result.valid is False
    assert result.unexpected == ids("ghost")
    assert result.lost == ids("b")
    assert result.received == 2


def test_refused_then_delivered_is_resurrected(tmp_path: Path) -> None:
    ops = [("p0", "invoke", "send", "a"), ("p0", "fail", "send", "a"), *got("a")]
    result = check(tmp_path, ops + drained("c0", end="info"))
    assert result.valid is False
    assert result.failed == 1
    assert result.resurrected == ids("a")
    assert result.recovered == NONE


def test_failed_and_never_delivered_is_fine(tmp_path: Path) -> None:
    ops = [("p0", "invoke", "send", "a"), ("p0", "fail", "send", "a")]
    result = check(tmp_path, ops + drained("c0"))
    assert (result.valid, result.attempted, result.acknowledged, result.failed) == (True, 1, 0, 1)
    assert result.indeterminate == 0


@pytest.mark.parametrize(
    ("ops", "failed", "indeterminate", "acknowledged"),
    [
        pytest.param(
            [("p0", "invoke", "send", "a"), ("p0", "info", "send", "a")], 0, 1, 0, id="info"
        ),
        pytest.param([("p0", "invoke", "send", "a")], 0, 1, 0, id="no-completion"),
        pytest.param(
            [
                ("p0", "invoke", "send", "a"),
                ("p0", "fail", "send", "a"),
                ("p0", "invoke", "send", "a"),
                ("p0", "info", "send", "a"),
            ],
            0,
            1,
            0,
            id="fail-then-info",
        ),
        pytest.param(
            [
                ("p0", "invoke", "send", "a"),
                ("p0", "fail", "send", "a"),
                ("p0", "invoke", "send", "a"),
            ],
            0,
            1,
            0,
            id="fail-then-unfinished",
        ),
        pytest.param(
            [
                ("p0", "invoke", "send", "a"),
                ("p1", "invoke", "send", "a"),
                ("p1", "fail", "send", "a"),
                ("p0", "fail", "send", "a"),
            ],
            1,
            0,
            0,
            id="two-processes-both-failed",
        ),
        pytest.param(
            [
                ("p0", "invoke", "send", "a"),
                ("p0", "fail", "send", "a"),
                ("p0", "fail", "send", "a"),
                ("p1", "invoke", "send", "a"),
            ],
            0,
            1,
            0,
            id="unfinished-on-another-process",
        ),
        pytest.param(
            [("p0", "invoke", "send", "a"), ("p0", "info", "send", "a"), *sent("a")],
            0,
            0,
            1,
            id="info-then-ok",
        ),
        pytest.param(
            [("p0", "invoke", "send", "a"), *sent("a", "p1")],
            0,
            0,
            1,
            id="unfinished-then-ok",
        ),
    ],
)
def test_fail_info_and_unfinished_invokes(
    tmp_path: Path, ops: list[Op], failed: int, indeterminate: int, acknowledged: int
) -> None:
    result = check(tmp_path, ops + drained("c0"))
    assert (result.failed, result.indeterminate, result.acknowledged) == (
        failed,
        indeterminate,
        acknowledged,
    )
    assert result.attempted == 1


def test_indeterminate_then_delivered_is_recovered(tmp_path: Path) -> None:
    ops = [("p0", "invoke", "send", "a"), ("p0", "info", "send", "a")]
    ops += [("p1", "invoke", "send", "b"), *got("b"), *got("a")]
    result = check(tmp_path, ops + drained("c0"))
    assert result.valid is True
    assert result.recovered == ids("a", "b")
    assert result.indeterminate == 2


def test_duplicates_are_counted_but_valid(tmp_path: Path) -> None:
    ops = sent("a") + sent("b") + sent("c") + got("b") * 3 + got("a") * 2 + got("c")
    result = check(tmp_path, ops + drained("c0"))
    assert result.valid is True
    assert result.duplicated == ids("a", "b")
    assert result.duplicate_deliveries == 3
    assert result.received == 3


def test_ids_are_sorted_and_capped_at_1000(tmp_path: Path) -> None:
    values = [f"m{n:05d}" for n in range(1500)]
    shuffled = values[:]
    random.Random(7).shuffle(shuffled)
    ops = [op for value in shuffled for op in sent(value)]
    result = check(tmp_path, ops + drained("c0"))
    assert result.lost.count == 1500
    assert result.lost.ids == tuple(values[:1000])
    assert len(result.to_json()["lost"]["ids"]) == 1000
