"""The run folder's Parquet copies: the same rows as the JSONL with the explicit schema,
written atomically, rebuilt when missing or stale, never made from a history that breaks
the format."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from checker_helpers import drained, got, sent, write_history

from lab.ground.errors import InputError
from lab.judge.checker import read_history
from lab.judge.columnar import (
    EVENTS_SCHEMA,
    HISTORY_SCHEMA,
    events_parquet,
    fresh_history_parquet,
    history_parquet,
    write_columnar_copies,
)

EVENTS = [
    {"v": 1, "time": 5, "kind": "run.start", "node": None, "wall_ns": 1700000000000000000},
    {"v": 1, "time": 9, "kind": "node.role", "node": "n1", "role": "MASTER"},
    {"v": 1, "time": 12, "kind": "broker.log", "node": "n2", "code": "HA-1010", "text": "x"},
    {"v": 1, "time": 15, "kind": "workload.phase", "node": None, "phase": "load"},
]


def _run_folder(tmp_path: Path, *, torn: bool = False) -> Path:
    write_history(tmp_path, sent("p0-1") + sent("p0-2") + got("p0-1") + drained("c0"))
    lines = "".join(json.dumps(e) + "\n" for e in EVENTS)
    (tmp_path / "events.jsonl").write_text(lines + ('{"v": 1, "ti' if torn else ""))
    if torn:
        with (tmp_path / "history.jsonl").open("a") as history:
            history.write('{"index": 9, "time": 1')
    return tmp_path


def test_the_copies_hold_the_jsonl_rows_with_the_explicit_schema(tmp_path: Path) -> None:
    folder = _run_folder(tmp_path, torn=True)
    write_columnar_copies(folder)
    history = pq.read_table(folder / "history.parquet")
    assert history.schema.remove_metadata() == HISTORY_SCHEMA
    expected = read_history(folder / "history.jsonl")
    assert history.select(expected.column_names).to_pylist() == expected.to_pylist()
    assert set(history.column("node").to_pylist()) == {"n1"}
    events = pq.read_table(folder / "events.parquet")
    assert events.schema.remove_metadata() == EVENTS_SCHEMA
    rows = events.to_pylist()
    assert [row["kind"] for row in rows] == [e["kind"] for e in EVENTS]
    assert [json.loads(row["raw"]) for row in rows] == EVENTS
    assert (rows[1]["role"], rows[2]["code"], rows[3]["phase"]) == ("MASTER", "HA-1010", "load")
    assert sorted(p.name for p in folder.iterdir()) == [
        "events.jsonl",
        "events.parquet",
        "history.jsonl",
        "history.parquet",
    ]


def test_a_copy_is_rebuilt_when_missing_or_stale_and_kept_when_fresh(tmp_path: Path) -> None:
    folder = _run_folder(tmp_path)
    history = folder / "history.jsonl"
    assert fresh_history_parquet(history) is None
    copy = history_parquet(folder)
    assert fresh_history_parquet(history) == copy
    written = copy.stat().st_mtime_ns
    assert history_parquet(folder) == copy
    assert copy.stat().st_mtime_ns == written
    with history.open("a") as more:
        more.write(json.dumps({"index": 7, "time": 70, "process": "c0", "type": "ok",
                               "f": "receive", "value": "p0-2"}) + "\n")  # fmt: skip
    assert fresh_history_parquet(history) is None
    assert pq.read_table(history_parquet(history)).num_rows == 8
    copy = events_parquet(folder)
    older = (folder / "events.jsonl").stat().st_mtime_ns - 10_000_000_000
    os.utime(copy, ns=(older, older))  # a copy older than its JSONL is stale
    assert events_parquet(folder / "events.jsonl") == copy
    assert copy.stat().st_mtime_ns > older


def test_a_history_that_breaks_the_format_gets_no_copy(tmp_path: Path) -> None:
    folder = _run_folder(tmp_path)
    with (folder / "history.jsonl").open("a") as more:
        more.write('{"index": 7, "time": 70, "process": "c0", "type": "ok", "f": "receive"}\n')
    with pytest.raises(InputError, match=r'history\.jsonl:8: missing required field "value"'):
        write_columnar_copies(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["events.jsonl", "history.jsonl"]


def test_a_folder_that_cannot_be_written_is_an_input_error(tmp_path: Path) -> None:
    folder = _run_folder(tmp_path)
    (folder / "history.parquet").mkdir()  # a directory where the copy should go
    with pytest.raises(InputError, match=r"history\.parquet: cannot write"):
        history_parquet(folder)
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_missing_files_are_skipped_or_named(tmp_path: Path) -> None:
    write_columnar_copies(tmp_path)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InputError, match=r"history\.jsonl: cannot read"):
        history_parquet(tmp_path)
