"""The queue checker (formats.md section 4) on hand-written and synthesized histories."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lab.judge.checker
from lab.bench.history_synth import SynthTruth, synthesize
from lab.ground.errors import InputError
from lab.judge.checker import CheckResult, IdSet, check_path, check_table, read_history

Op = tuple[str, str, str, str | None]


def write_history(directory: Path, ops: list[Op], *, tail: str = "") -> Path:
    """Write ops as (process, type, f, value) lines, then `tail` verbatim."""
    path = directory / "history.jsonl"
    lines = [
        json.dumps(
            {"index": i, "time": 10 * i, "process": p, "type": t, "f": f, "value": v, "node": "n1"}
        )
        for i, (p, t, f, v) in enumerate(ops)
    ]
    path.write_text("".join(line + "\n" for line in lines) + tail, encoding="utf-8")
    return path


def sent(value: str, process: str = "p0") -> list[Op]:
    return [(process, "invoke", "send", value), (process, "ok", "send", value)]


def got(value: str, process: str = "c0") -> list[Op]:
    return [(process, "ok", "receive", value)]


def drained(*processes: str, end: str = "ok") -> list[Op]:
    ops: list[Op] = []
    for process in processes:
        ops += [(process, "invoke", "drain", None), (process, end, "drain", None)]
    return ops


def check(tmp_path: Path, ops: list[Op], *, tail: str = "") -> CheckResult:
    return check_path(write_history(tmp_path, ops, tail=tail))


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


def test_torn_last_line_is_ignored(tmp_path: Path) -> None:
    ops = sent("a") + got("a") + drained("c0")
    result = check(tmp_path, ops, tail='{"index": 6, "time": 60, "process": "p0", "ty')
    assert result.received == 1
    assert read_history(tmp_path / "history.jsonl").num_rows == 5


def test_complete_last_line_without_newline_is_read(tmp_path: Path) -> None:
    tail = json.dumps({"index": 2, "time": 5, "process": "c0", "type": "ok", "f": "receive"})
    tail = tail[:-1] + ', "value": "a"}'
    result = check(tmp_path, sent("a"), tail=tail)
    assert result.received == 1


def test_only_a_torn_line_is_an_empty_history(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text('{"index": 0, "ti', encoding="utf-8")
    assert read_history(path).num_rows == 0


def test_unknown_fields_and_blank_lines_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    records: list[dict[str, Any]] = [
        {"index": 0, "time": 1, "process": "p0", "type": "invoke", "f": "send", "value": "a"},
        {"index": 1, "time": 2, "process": "p0", "type": "ok", "f": "send", "value": "a", "seq": 1},
        {"index": 2, "time": 3, "process": "c0", "type": "ok", "f": "receive", "value": "a"},
    ]
    records[2]["extra"] = {"nested": [1, 2]}
    records[2]["redelivered"] = False
    lines = [json.dumps(record) for record in records]
    path.write_text(lines[0] + "\n\n" + "\n".join(lines[1:]) + "\n", encoding="utf-8")
    table = read_history(path)
    assert table.column_names == ["index", "time", "process", "type", "f", "value"]
    assert check_table(table).received == 1


def test_receive_invoke_may_have_no_value(tmp_path: Path) -> None:
    ops: list[Op] = [*sent("a"), ("c0", "invoke", "receive", None), *got("a")]
    assert check(tmp_path, ops + drained("c0")).received == 1


GOOD = '{"index": 0, "time": 1, "process": "p0", "type": "invoke", "f": "send", "value": "a"}'


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("this is not json", "not a JSON object"),
        ("[1, 2, 3]", "not a JSON object"),
        (GOOD.replace('"process": "p0", ', ""), 'missing required field "process"'),
        (GOOD.replace('"process": "p0"', '"process": null'), 'missing required field "process"'),
        (GOOD.replace('"index": 0', '"index": "0"'), 'field "index" must be an integer'),
        (GOOD.replace('"time": 1', '"time": 1.5'), 'field "time" must be an integer'),
        (GOOD.replace('"time": 1', '"time": true'), 'field "time" must be an integer'),
        (GOOD.replace('"process": "p0"', '"process": 3'), 'field "process" must be a string'),
        (GOOD.replace('"invoke"', '"done"'), 'field "type" must be one of'),
        (GOOD.replace('"send"', '"publish"'), 'field "f" must be one of'),
        (GOOD.replace('"value": "a"', '"value": 7'), 'field "value" must be a string'),
        (GOOD.replace('"value": "a"', '"value": null'), 'missing required field "value"'),
        (GOOD.replace(', "value": "a"', ""), 'missing required field "value"'),
        (GOOD.replace('"index": 0', '"index": 0, "index": 1'), 'field "index" appears twice'),
    ],
)
def test_bad_line_names_file_and_line(tmp_path: Path, bad: str, message: str) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(f"{GOOD}\n{GOOD}\n{bad}\n{GOOD}\n", encoding="utf-8")
    with pytest.raises(InputError) as raised:
        read_history(path)
    assert str(raised.value).startswith(f"{path}:3: {message}")


def test_missing_field_message_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(GOOD + "\n" + GOOD.replace('"process": "p0", ', "") + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r'history\.jsonl:2: missing required field "process"$'):
        check_path(path)


def test_bad_line_deep_in_a_big_file_is_located(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    good = [GOOD.replace('"index": 0', f'"index": {n}') for n in range(50_000)]
    good[41_234] = good[41_234].replace('"p0"', '"p0\\"')
    path.write_text("\n".join(good) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"history\.jsonl:41235: not a JSON object"):
        read_history(path)


def test_torn_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(GOOD + "\n" + GOOD[:30] + "\n" + GOOD + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"history\.jsonl:2: "):
        read_history(path)


def test_missing_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "history.jsonl"
    with pytest.raises(InputError, match=r"nowhere/history\.jsonl: cannot read"):
        check_path(missing)


def test_run_directory_without_history_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"history\.jsonl: cannot read"):
        check_path(tmp_path)


def assert_matches_truth(result: CheckResult, truth: SynthTruth) -> None:
    def capped(values: tuple[str, ...]) -> IdSet:
        return IdSet(count=len(values), ids=values[:1000])

    assert result == CheckResult(
        valid=truth.valid,
        attempted=truth.attempted,
        acknowledged=truth.acknowledged,
        failed=len(truth.failed),
        indeterminate=len(truth.indeterminate),
        received=truth.received,
        lost=capped(truth.lost),
        unexpected=capped(truth.unexpected),
        resurrected=capped(truth.resurrected),
        recovered=capped(truth.recovered),
        duplicated=capped(truth.duplicated),
        duplicate_deliveries=truth.duplicate_deliveries,
    )


faults = st.integers(min_value=0, max_value=12)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**32),
    operations=st.integers(min_value=250, max_value=3000),
    producers=st.integers(min_value=1, max_value=5),
    consumers=st.integers(min_value=1, max_value=3),
    lose=faults,
    duplicate=faults,
    resurrect=faults,
    unknown=faults,
    fail=faults,
    unexpected=faults,
    drain_ok=st.booleans(),
)
def test_checker_finds_exactly_the_injected_faults(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    operations: int,
    producers: int,
    consumers: int,
    lose: int,
    duplicate: int,
    resurrect: int,
    unknown: int,
    fail: int,
    unexpected: int,
    drain_ok: bool,
) -> None:
    path = tmp_path_factory.mktemp("synth") / "history.jsonl"
    truth = synthesize(
        path,
        operations=operations,
        producers=producers,
        consumers=consumers,
        seed=seed,
        lose=lose,
        duplicate=duplicate,
        resurrect=resurrect,
        unknown=unknown,
        fail=fail,
        unexpected=unexpected,
        drain_ok=drain_ok,
    )
    assert (len(truth.lost), len(truth.duplicated), len(truth.resurrected)) == (
        lose,
        duplicate,
        resurrect,
    )
    assert (len(truth.indeterminate), len(truth.unexpected)) == (unknown, unexpected)
    assert len(truth.failed) == fail + resurrect
    table = read_history(path)
    assert table.num_rows == truth.operations
    assert operations - 2 <= truth.operations <= operations
    assert_matches_truth(check_table(table), truth)


def test_big_synthesized_history_caps_ids(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    truth = synthesize(path, operations=20_000, seed=3, lose=1200, drain_ok=False)
    result = check_path(path)
    assert result.valid == "unknown"
    assert result.lost.count == 1200
    assert_matches_truth(result, truth)
