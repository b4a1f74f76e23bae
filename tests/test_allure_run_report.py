"""What one run shows in Allure: the timeline chart, a step per fault, labels, attachments."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import allure_commons
import matplotlib.image
import pytest
from allure_commons import model2
from allure_commons.logger import AllureMemoryLogger
from allure_commons.reporter import AllureReporter

from lab.judge.checker import check_path
from lab.judge.metrics import read_events, read_operations
from lab.reporting.allure_attach import publish
from lab.reporting.allure_report import (
    CHECKER_RESULT,
    HISTORY_SUMMARY,
    TIMELINE,
    run_report,
    scenario_family,
)
from lab.reporting.timeline_chart import CHART_SIZE_PX, render_timeline, timeline_from_run
from scenarios.catalog import scenario_named

NS = 1_000_000_000
MS = 1_000_000
# the monotonic clock when the hand-made run's load began, and wall minus monotonic
LOAD_AT_MONOTONIC = 5_000 * NS
OFFSET = 1_700_000_000_000 * MS


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _event(time_s: float, kind: str, node: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "time": int(time_s * NS), "kind": kind, "node": node, **fields}


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A two-node run: n1 master, killed 3.0–4.5 s (f1), n2 master from 3.6 s; a second
    fault f2 that failed to apply; f3 planned but never applied (the run ended first)."""
    folder = tmp_path / "runs" / "two-node-master-failure" / "20260101T000000Z-7"
    (folder / "nodes" / "n1").mkdir(parents=True)
    (folder / "nodes" / "n2").mkdir(parents=True)
    spec = scenario_named("two-node-master-failure").spec(7)
    (folder / "spec.json").write_text(json.dumps(spec.to_json()), encoding="utf-8")
    # the load starts at 1.0 s on the run clock; schedule times are the monotonic clock
    run_start = LOAD_AT_MONOTONIC - 1 * NS

    def applied(fault_id: str, action: str, at_run_s: float, **extra: Any) -> dict[str, Any]:
        return {
            "phase": "applied",
            "id": fault_id,
            "at_s": 0.0,
            "action": action,
            "fault": "kill" if fault_id == "f1" else "pause",
            "target": "n1" if fault_id == "f1" else "n2",
            "params": {},
            "time": run_start + int(at_run_s * NS),
            **extra,
        }

    def planned(fault_id: str, action: str, at_s: float, fault: str, target: str) -> dict:
        return {
            "phase": "planned",
            "id": fault_id,
            "at_s": at_s,
            "action": action,
            "fault": fault,
            "target": target,
            "params": {},
        }

    _write_jsonl(
        folder / "schedule.jsonl",
        [
            planned("f1", "start", 2.0, "kill", "@master"),
            planned("f1", "stop", 3.5, "kill", "@master"),
            planned("f2", "start", 4.0, "pause", "n2"),
            planned("f2", "stop", 4.2, "pause", "n2"),
            planned("f3", "start", 9.0, "cut", "client_to_n1"),
            planned("f3", "stop", 9.5, "cut", "client_to_n1"),
            applied("f1", "start", 3.0, ok=True, planned_target="@master"),
            applied("f2", "start", 5.0, ok=False, error="n2 is not running"),
            applied("f1", "stop", 4.5, ok=True),
        ],
    )
    ops: list[dict[str, Any]] = []
    for i in range(60):  # 10 sends a second from 1.0 s to 7.0 s, none while n1 is down
        t = 1.0 + i * 0.1
        if 3.0 <= t < 4.0:
            continue
        node = "n1" if t < 3.0 else "n2"
        ops.append(
            {
                "time": int(t * NS),
                "process": "p1",
                "type": "invoke",
                "f": "send",
                "value": f"m{i}",
                "node": node,
            }
        )
        ops.append(
            {
                "time": int((t + 0.004) * NS),
                "process": "p1",
                "type": "ok",
                "f": "send",
                "value": f"m{i}",
                "node": node,
            }
        )
        ops.append(
            {
                "time": int((t + 0.01) * NS),
                "process": "c1",
                "type": "ok",
                "f": "receive",
                "value": f"m{i}",
                "node": node,
            }
        )
    ops.append({"time": 7 * NS, "process": "c1", "type": "invoke", "f": "drain", "value": None})
    ops.append({"time": 8 * NS, "process": "c1", "type": "ok", "f": "drain", "value": None})
    _write_jsonl(folder / "history.jsonl", [{"index": i, **op} for i, op in enumerate(ops)])
    _write_jsonl(
        folder / "events.jsonl",
        [
            _event(0.1, "node.start", "n1", pid=1),
            _event(0.1, "node.start", "n2", pid=2),
            _event(0.5, "node.role", "n1", role="MASTER"),
            _event(0.6, "node.role", "n2", role="REPLICA"),
            _event(1.0, "workload.phase", phase="load"),
            _event(3.0, "fault.start", id="f1", fault="kill", target="n1", params={}),
            _event(3.05, "node.kill", "n1", signal="SIGKILL"),
            _event(3.6, "node.role", "n2", role="MASTER"),
            _event(4.5, "node.start", "n1", pid=3),
            _event(4.5, "fault.end", id="f1", fault="kill", target="n1"),
            _event(4.9, "node.role", "n1", role="REPLICA"),
            _event(7.0, "workload.phase", phase="heal"),
            _event(9.0, "workload.phase", phase="end"),
        ],
    )
    check = check_path(folder / "history.jsonl")
    (folder / "result.json").write_text(
        json.dumps(
            {
                "v": 1,
                "scenario": spec.scenario,
                "seed": 7,
                "verdict": "held",
                "reasons": [],
                "prediction": "the replica waits for the designation",
                "check": check.to_json(),
                "reproduce": f".venv/bin/lab replay {folder}",
            }
        ),
        encoding="utf-8",
    )
    (folder / "nodes" / "n1" / "broker.log").write_text("MST-1001 : Created\n", encoding="utf-8")
    (folder / "nodes" / "n1" / "stderr.log").write_text("a warning\n", encoding="utf-8")
    (folder / "nodes" / "n2" / "broker.log").write_text("MST-1006 : Master\n", encoding="utf-8")
    (folder / "nodes" / "n2" / "stderr.log").write_text("", encoding="utf-8")
    return folder


def _report(run_dir: Path, test_command: str | None = "pytest x::y") -> Any:
    return run_report(run_dir, family="two node group", offset_ns=OFFSET, test_command=test_command)


def test_timeline_figures_from_the_run(run_dir: Path) -> None:
    timeline = timeline_from_run(
        read_operations(run_dir / "history.jsonl"), read_events(run_dir / "events.jsonl")
    )
    assert timeline.end_s == 9.0
    assert timeline.bucket_s == 0.1
    assert len(timeline.bucket_starts_s) == 90
    # bucket [1.0, 1.1) holds one acknowledged send and one receive: 10 per second
    assert timeline.sends_ok_per_s[10] == 10.0
    assert timeline.receives_per_s[10] == 10.0
    assert timeline.sends_ok_per_s[35] == 0.0  # n1 down, nothing acknowledged
    assert sum(timeline.sends_ok_per_s) * timeline.bucket_s == pytest.approx(50)
    assert {round(ms, 3) for _, ms, _ in timeline.send_latencies} == {4.0}
    assert [(w.label, w.start_s, w.end_s) for w in timeline.faults] == [("f1 kill n1", 3.0, 4.5)]
    assert [(s.node, s.start_s, s.end_s) for s in timeline.masters()] == [
        ("n1", 0.5, 3.05),
        ("n2", 3.6, 9.0),
    ]
    n1 = [(s.role, s.start_s, s.end_s) for s in timeline.roles if s.node == "n1"]
    assert n1 == [("MASTER", 0.5, 3.05), ("DOWN", 3.05, 4.5), ("REPLICA", 4.9, 9.0)]
    assert timeline.nodes == ("n1", "n2")


def test_timeline_png_decodes_at_its_size(run_dir: Path) -> None:
    timeline = timeline_from_run(
        read_operations(run_dir / "history.jsonl"), read_events(run_dir / "events.jsonl")
    )
    png = render_timeline(timeline, "two-node-master-failure seed 7")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
    width, height = CHART_SIZE_PX
    assert pixels.shape[:2] == (height, width)
    assert pixels.std() > 0.05  # not a blank canvas


def test_one_step_per_fault_with_its_applied_times(run_dir: Path) -> None:
    steps = _report(run_dir).steps
    assert [s.title for s in steps] == ["f1 kill n1", "f2 pause n2", "f3 cut client_to_n1"]
    f1, f2, f3 = steps
    run_start_ms = (LOAD_AT_MONOTONIC - NS + OFFSET) // MS
    assert (f1.start_ms, f1.stop_ms) == (run_start_ms + 3000, run_start_ms + 4500)
    assert f1.status == "passed"
    assert ("planned target", "@master") in f1.parameters
    assert ("planned start (s into the load)", "2.0") in f1.parameters
    assert [a.name for a in f1.attachments] == ["events during f1"]
    kinds = [json.loads(line)["kind"] for line in f1.attachments[0].body.decode().splitlines()]
    assert kinds == ["fault.start", "node.kill", "node.role", "node.start", "fault.end"]
    assert (f2.status, f2.error) == ("broken", "n2 is not running")
    assert f2.start_ms == f2.stop_ms == run_start_ms + 5000
    assert (f3.status, f3.start_ms, f3.stop_ms) == ("skipped", None, None)


def test_labels_description_and_attachments(run_dir: Path) -> None:
    report = _report(run_dir)
    assert report.labels[:6] == (
        ("parentSuite", "two node group"),
        ("suite", "two-node-master-failure"),
        ("subSuite", "broker_ref"),
        ("epic", "two node group"),
        ("feature", "two-node-master-failure"),
        ("story", "broker_ref"),
    )
    commands = dict(report.description.commands)
    assert commands["Reproduce this test"] == "pytest x::y"
    # The run's own reproduce command (result.json), the one the CLI and the runner print.
    assert commands["Reproduce this run"] == f".venv/bin/lab replay {run_dir}"
    assert f".venv/bin/lab replay {run_dir}" in report.description.markdown()
    assert "<pre><code>pytest x::y</code></pre>" in report.description.html()
    assert [a.name for a in report.attachments] == [
        TIMELINE,
        CHECKER_RESULT,
        HISTORY_SUMMARY,
        "result.json",
        "spec.json",
        "schedule.jsonl",
        "events.jsonl",
        "n1 broker.log",
        "n1 stderr.log",  # n2's is empty: left out
        "n2 broker.log",
    ]
    check = json.loads(report.attachment(CHECKER_RESULT).body)
    assert check == check_path(run_dir).to_json()
    assert check["acknowledged"] == 50
    summary = report.attachment(HISTORY_SUMMARY).body.decode()
    assert "152 operations by 2 processes (c1, p1), on nodes n1, n2" in summary
    send_row = next(line for line in summary.splitlines() if line.startswith("send "))
    assert send_row.split() == ["send", "50", "50", "0", "0"]
    assert "lost 0; unexpected 0; resurrected 0" in summary
    assert report.attachment("n2 broker.log").body == b"MST-1006 : Master\n"
    assert report.attachment(TIMELINE).mime == "image/png"


def test_publish_hands_everything_to_the_allure_reporter(run_dir: Path) -> None:
    report = _report(run_dir)
    reporter = AllureReporter()
    memory = AllureMemoryLogger()
    allure_commons.plugin_manager.register(memory)
    try:
        reporter.schedule_test("t1", model2.TestResult(name="a test", uuid="t1"))
        publish(report, reporter, "t1")
    finally:
        allure_commons.plugin_manager.unregister(memory)
    test = reporter.get_test("t1")
    assert [(s.name, s.start, s.stop, s.status) for s in test.steps] == [
        (s.title, s.start_ms, s.stop_ms, s.status) for s in report.steps
    ]
    assert test.steps[1].statusDetails.message == "n2 is not running"
    assert test.steps[0].attachments[0].name == "events during f1"
    assert [a.name for a in test.attachments] == [a.name for a in report.attachments]
    png_file = next(a.source for a in test.attachments if a.name == TIMELINE)
    assert png_file.endswith(".png")
    assert memory.attachments[png_file] == report.attachment(TIMELINE).body
    assert ("parentSuite", "two node group") in [(lb.name, lb.value) for lb in test.labels]
    assert test.descriptionHtml == report.description.html()


def test_report_of_a_run_that_broke_off(run_dir: Path) -> None:
    (run_dir / "result.json").write_text(
        json.dumps({"verdict": "unknown", "error": "ClusterError: n1 did not start"})
    )
    report = _report(run_dir, test_command=None)
    assert report.description.verdict == "unknown"
    assert report.description.reasons == ("ClusterError: n1 did not start",)
    assert "Reproduce this test" not in dict(report.description.commands)
    # the checker's result is computed from the history when result.json has none
    assert json.loads(report.attachment(CHECKER_RESULT).body)["acknowledged"] == 50


def test_scenario_family_is_the_module_of_its_schedule() -> None:
    assert scenario_family("single-node-crash") == "single node"
    assert scenario_family("split-brain") == "two node group"
    assert scenario_family("master-failure") == "replicated group"
    assert scenario_family("no-such-scenario") == "other"
