"""Run specs, seeds and run folders (docs/run-folder.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.ground.errors import InputError, UsageError
from lab.ground.spec import RunSpec
from lab.ground.spec_words import parse_seed
from lab.judge.metrics import read_events
from lab.run.folder import EventLog, HistoryRecorder, RunClock, RunFolder


@pytest.mark.parametrize("text", ["-1", "abc", "1.5", "", str(2**63)])
def test_bad_seeds_are_refused(text: str) -> None:
    with pytest.raises(UsageError, match="bad seed"):
        parse_seed(text)


def test_good_seed() -> None:
    assert parse_seed("0") == 0
    assert parse_seed(str(2**63 - 1)) == 2**63 - 1


def test_run_folder_layout_and_latest(tmp_path: Path) -> None:
    first = RunFolder.create(tmp_path, "single-node-crash", 7)
    second = RunFolder.create(tmp_path, "single-node-crash", 7)
    assert first.path != second.path
    assert first.path.parent == tmp_path / "single-node-crash"
    name = first.path.name
    assert name.endswith("-7") and name[8] == "T" and name[15] == "Z"
    latest = tmp_path / "single-node-crash" / "latest"
    assert latest.is_symlink() and latest.resolve() == second.path.resolve()


def test_history_recorder_numbers_in_file_order(tmp_path: Path) -> None:
    recorder = HistoryRecorder(tmp_path / "history.jsonl")
    recorder.record({"time": 5, "process": "p1", "type": "invoke", "f": "send", "value": "p1-0"})
    recorder.record({"time": 6, "process": "p1", "type": "ok", "f": "send", "value": "p1-0"})
    recorder.close()
    lines = [json.loads(x) for x in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert [x["index"] for x in lines] == [0, 1]
    assert recorder.acknowledged == 1


def test_events_have_version_time_kind_node(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", RunClock())
    log.emit("node.kill", "n1", signal="SIGKILL")
    log.close()
    with (tmp_path / "events.jsonl").open("a") as f:
        f.write('{"v": 1, "time": 3, "ki')  # a torn last line
    events = read_events(tmp_path / "events.jsonl")
    assert len(events) == 1
    assert events[0]["v"] == 1 and events[0]["kind"] == "node.kill" and events[0]["node"] == "n1"
    assert isinstance(events[0]["time"], int)


def test_spec_from_a_broken_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"spec\.json"):
        RunSpec.from_json({"seed": 1}, tmp_path / "spec.json")
