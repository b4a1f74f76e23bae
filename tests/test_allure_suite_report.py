"""Allure's environment, the `lab allure` command, and a suite's report opened in Chromium."""

from __future__ import annotations

import contextlib
import functools
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

import matplotlib.image
import pytest
from chromium import CHROMIUM_FLAGS, chromium
from conftest import ROOT, run_lab

from lab.ground.errors import SetupError
from lab.pytest_plugin import skip_unless_ci
from lab.reporting.allure_cli import generate_report
from lab.reporting.allure_environment import environment_of, merge_environment, read_environment
from lab.reporting.allure_report import CHECKER_RESULT, HISTORY_SUMMARY, TIMELINE
from lab.reporting.timeline_chart import CHART_SIZE_PX
from scenarios.catalog import scenario_named


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


def _bare_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A results folder, and a PATH of one empty folder (returned) with no JAVA_HOME."""
    results = tmp_path / "results"
    results.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    return results, bin_dir


def test_allure_command_names_java_when_it_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results, _ = _bare_path(tmp_path, monkeypatch)
    with pytest.raises(SetupError, match="Java"):
        generate_report(results, tmp_path / "out", tools_dir=tmp_path / "tools", say=print)


def test_allure_command_names_npm_when_only_java_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    java = shutil.which("java", path=os.defpath + os.pathsep + "/usr/lib/jvm/default-java/bin")
    if java is None:
        skip_unless_ci("needs Java to get past the Java check: no java on PATH")
    results, bin_dir = _bare_path(tmp_path, monkeypatch)
    (bin_dir / "java").symlink_to(java)
    with pytest.raises(SetupError, match="npm"):
        generate_report(results, tmp_path / "out", tools_dir=tmp_path / "tools", say=print)
    assert not (tmp_path / "tools" / "allure").exists()


# --- a real suite run, its HTML report, opened in headless Chromium ---


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

    browser = chromium()
    with _serving(out) as base:
        suites = _dump_dom(browser, f"{base}/index.html#suites", tmp_path / "profile")
        page = _dump_dom(
            browser, f"{base}/index.html#testresult/{case['uid']}", tmp_path / "profile"
        )
    assert ">single node<" in suites  # the family, the top of the suites tree (collapsed)
    assert "test_scenario_holds_its_prediction[single-node-crash]" in page
    for name in (CHECKER_RESULT, HISTORY_SUMMARY, "n1 broker.log", "f1 kill n1"):
        assert name in page
    assert "--lab-seed 20261121" in page  # the description's reproduce command
