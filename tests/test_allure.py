"""Allure: what a scenario test shows (steps, chart, attachments, labels, environment),
and a real suite run turned into an HTML report that headless Chromium opens."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import allure_commons
import matplotlib.image
import pytest
from allure_commons import model2
from allure_commons.logger import AllureMemoryLogger
from allure_commons.reporter import AllureReporter
from conftest import ROOT, run_lab

from lab.ground.errors import SetupError
from lab.judge.checker import check_path
from lab.judge.metrics import read_events, read_operations
from lab.reporting.allure_attach import (
    CHECKER_RESULT,
    HISTORY_SUMMARY,
    TIMELINE,
    publish,
    run_report,
    scenario_family,
)
from lab.reporting.allure_cli import generate_report
from lab.reporting.allure_environment import environment_of, merge_environment, read_environment
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
    assert commands["Run the scenario again with the same seed"].startswith(
        ".venv/bin/lab run two-node-master-failure --seed 7 --backend process"
    )
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


def test_environment_merges_every_run(tmp_path: Path) -> None:
    spec = scenario_named("single-node-crash").spec(7)
    merge_environment(tmp_path, environment_of(spec))
    merged = merge_environment(tmp_path, {**environment_of(spec), "seed": "11", "a key=": "x\\y"})
    assert read_environment(tmp_path) == merged
    assert merged["seed"] == "7, 11"
    assert merged["target"] == "broker_ref"
    assert merged["backend"] == "process"
    assert merged["durability"] == "NO_SYNC,NO_SYNC,SIMPLE_MAJORITY coalescing-sync"
    assert merged["lab.version"] == spec.lab_version
    assert merged["a key="] == "x\\y"
    text = (tmp_path / "environment.properties").read_text()
    assert "a\\ key\\= = x\\\\y" in text
    assert [p.name for p in tmp_path.iterdir()] == ["environment.properties"]


def test_allure_command_without_results_dir(tmp_path: Path) -> None:
    result = run_lab("allure", str(tmp_path / "nope"), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 2
    err = result.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lab: error: ")
    assert "nope" in err[0]
    assert not (tmp_path / "out").exists()


def test_allure_command_names_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(SetupError, match="Java"):
        generate_report(results, tmp_path / "out", tools_dir=tmp_path / "tools", say=print)
    java = shutil.which("java", path=os.defpath + os.pathsep + "/usr/lib/jvm/default-java/bin")
    if java is None:
        return
    (bin_dir / "java").symlink_to(java)
    with pytest.raises(SetupError, match="npm"):
        generate_report(results, tmp_path / "out", tools_dir=tmp_path / "tools", say=print)
    assert not (tmp_path / "tools" / "allure").exists()


# --- a real suite run, its HTML report, opened in headless Chromium ---

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-quic",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
)


def _chromium() -> str:
    """Debian's chromium, installed with apt-get when missing (root only), or a skip."""
    found = shutil.which("chromium")
    if found:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("needs chromium: not installed, and not root to apt-get install chromium")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [
        "apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "-q",
        "--no-install-recommends", "chromium",
    ]  # fmt: skip
    done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:  # the package lists may be missing or stale
        subprocess.run(
            ["apt-get", "-o", "DPkg::Lock::Timeout=600", "update", "-q"],
            env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=1200)
    found = shutil.which("chromium")
    if done.returncode != 0 or not found:
        pytest.skip(f"chromium could not be installed with apt-get: {done.stderr.strip()[-300:]}")
    return found


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _serving(folder: Path) -> Iterator[str]:
    """Serve `folder` on 127.0.0.1 (Allure's page loads its data with requests); the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _dump_dom(chromium: str, url: str, profile: Path) -> str:
    done = subprocess.run(
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.processes
@pytest.mark.allure
def test_suite_report_opens_in_chromium(tmp_path: Path) -> None:
    results, out = tmp_path / "allure-results", tmp_path / "allure-report"
    suite = subprocess.run(
        [
            sys.executable, "-m", "pytest", "scenarios/test_scenarios.py",
            "-k", "single-node-crash and not containers", "--alluredir", str(results),
            "-p", "no:cacheprovider", "-q", f"--basetemp={tmp_path / 'suite'}",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert "1 passed" in suite.stdout or "1 failed" in suite.stdout, suite.stdout[-3000:]
    assert "environment.properties" in os.listdir(results)
    assert read_environment(results)["seed"] == "20261121"

    made = run_lab(
        "allure", str(results), "--out", str(out), "--tools-dir", str(ROOT / ".lab" / "tools"),
        cwd=tmp_path, timeout=1200,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == str(out)

    cases = [json.loads(p.read_text()) for p in (out / "data" / "test-cases").glob("*.json")]
    assert [c["name"] for c in cases] == ["test_scenario_holds_its_prediction[single-node-crash]"]
    case = cases[0]
    stage = case["testStage"]
    names = [a["name"] for a in stage["attachments"]]
    for name in (TIMELINE, CHECKER_RESULT, HISTORY_SUMMARY, "events.jsonl", "n1 broker.log"):
        assert name in names
    assert [s["name"] for s in stage["steps"]] == ["f1 kill n1"]
    step, test_time = stage["steps"][0]["time"], case["time"]
    assert step["duration"] >= 1000  # the node stays down 1–3 s
    assert test_time["start"] <= step["start"] <= step["stop"] <= test_time["stop"]
    assert {"name": "parentSuite", "value": "single node"} in case["labels"]
    png = next(a for a in stage["attachments"] if a["name"] == TIMELINE)
    pixels = matplotlib.image.imread(out / "data" / "attachments" / png["source"], format="png")
    assert pixels.shape[:2] == (CHART_SIZE_PX[1], CHART_SIZE_PX[0])
    environment = json.loads((out / "widgets" / "environment.json").read_text())
    assert {"name": "seed", "values": ["20261121"]} in environment

    chromium = _chromium()
    with _serving(out) as base:
        suites = _dump_dom(chromium, f"{base}/index.html#suites", tmp_path / "profile")
        page = _dump_dom(
            chromium, f"{base}/index.html#testresult/{case['uid']}", tmp_path / "profile"
        )
    assert ">single node<" in suites  # the family, the top of the suites tree (collapsed)
    assert "test_scenario_holds_its_prediction[single-node-crash]" in page
    for name in (CHECKER_RESULT, HISTORY_SUMMARY, "n1 broker.log", "f1 kill n1"):
        assert name in page
    assert "--lab-seed 20261121" in page  # the description's reproduce command
