"""The checker reading history.jsonl: torn and blank lines, bad lines named, missing files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from checker_helpers import Op, check, drained, got, sent

from lab.ground.errors import InputError
from lab.ground.files import LINE_LIMIT
from lab.judge.checker import check_path, check_table, read_history
from lab.judge.history_jsonl import CHECKED, jsonl_tables


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


def test_a_torn_line_cut_inside_a_character_is_still_torn(tmp_path: Path) -> None:
    tail = '{"index": 2, "time": 3, "process": "p0", "type": "info", "error": "é'.encode()[:-1]
    path = tmp_path / "history.jsonl"
    path.write_bytes((GOOD + "\n").encode() + tail)
    assert read_history(path).num_rows == 1


@pytest.mark.parametrize(
    ("tail", "says"),
    [
        (b"\0\0\0\0", "2: binary data (a NUL byte at column 1)"),
        (b'{"index": 1, "va\xff\xfe', "2: not UTF-8 text (byte 0xff at column 17)"),
        (b"hello there", "2: not a JSON object"),
    ],
)
def test_what_follows_the_last_newline_is_a_torn_line_or_an_error(
    tmp_path: Path, tail: bytes, says: str
) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes((GOOD + "\n").encode() + tail)
    with pytest.raises(InputError, match=rf"history\.jsonl:{re.escape(says)}"):
        check_path(path)


def test_lines_longer_than_a_chunk_are_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    lines = [GOOD.replace('"index": 0', f'"index": {n}') for n in range(40)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tables = list(jsonl_tables(path, CHECKED, chunk_bytes=50))  # every line is longer
    assert sum(t.num_rows for t in tables) == 40
    assert [i for t in tables for i in t.column("index").to_pylist()] == list(range(40))


def test_a_line_longer_than_the_limit_is_refused_without_reading_it_whole(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.jsonl"
    long = '{"index": 1, "note": "' + "x" * (LINE_LIMIT + 10) + '"}'
    path.write_text(f"{GOOD}\n{long}\n{GOOD}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"history\.jsonl:2: a line longer than 1 MiB"):
        list(jsonl_tables(path, CHECKED, chunk_bytes=4096))
    path.write_text(f"{GOOD}\n{GOOD}\n{long}", encoding="utf-8")  # the last, without newline
    with pytest.raises(InputError, match=r"history\.jsonl:3: a line longer than 1 MiB"):
        check_path(path)


def test_a_binary_file_is_named_by_its_first_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"\x1f\x8b\x08\x00junk\nmore junk\n\xff\xfe tail")
    with pytest.raises(InputError, match=r"history\.jsonl:1: not UTF-8 text \(byte 0x8b at col"):
        check_path(path)
