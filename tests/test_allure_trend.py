"""A night's Allure report as the nightly job makes it, for real: a run that breaks (the
acknowledgement policy NONE incident, judged by "no acknowledged message is lost"), its
test failing through the scenario suite's `_assert_held`, and two reports generated one
after the other, the second with the first's history: the trend has two points, the
executor is named, and the failing test sits in the `lost` category."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from lab.reporting.allure_ci import Executor
from lab.reporting.allure_cli import generate_report

TEST_MODULE = """
from pathlib import Path

from lab.compose import parts_for
from lab.run.incident import load_incident
from lab.run.runner import run_scenario
from scenarios.test_scenarios import _assert_held


def test_incident_holds(tmp_path):
    spec = load_incident(Path({incident!r}))
    parts = parts_for(spec.scenario, spec.backend, spec.target, spec.group.mode)
    _assert_held(run_scenario(spec, parts, tmp_path / "runs"))
"""


def _leaves(node: dict[str, Any]) -> list[dict[str, Any]]:
    children = node.get("children")
    if not children:
        return [node]
    return [leaf for child in children for leaf in _leaves(child)]


# Long: tests/test_allure_suite_report.py builds and opens a report by default.
@pytest.mark.long
@pytest.mark.processes
@pytest.mark.allure
def test_two_nights_trend_executor_and_categories(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    incident = ROOT / "incidents" / "ack-none-crash.toml"
    (suite / "test_incident.py").write_text(TEST_MODULE.format(incident=str(incident)))
    results = tmp_path / "allure-results"
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", str(suite / "test_incident.py"),
            "-c", str(suite / "pytest.ini"), "--rootdir", str(suite), "-p", "no:cacheprovider",
            "-q", "--alluredir", str(results), f"--basetemp={tmp_path / 'base'}",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert "1 failed" in done.stdout, done.stdout[-3000:]
    assert "violations: lost" in done.stdout

    tools = ROOT / ".lab" / "tools"
    night1, night2 = tmp_path / "night1", tmp_path / "night2"
    generate_report(
        results, night1, tools_dir=tools, say=print, executor=Executor("lab nightly", build_order=1)
    )
    generate_report(
        results,
        night2,
        tools_dir=tools,
        say=print,
        history_from=night1,
        executor=Executor("lab nightly", build_order=2, report_url="http://127.0.0.1/night/2/"),
    )

    trend = json.loads((night2 / "widgets" / "history-trend.json").read_text())
    assert [point["buildOrder"] for point in trend] == [2, 1]
    assert [point["data"]["failed"] for point in trend] == [1, 1]
    executors = json.loads((night2 / "widgets" / "executors.json").read_text())
    assert [(e["name"], e["buildOrder"]) for e in executors] == [("lab nightly", 2)]

    tree = json.loads((night2 / "data" / "categories.json").read_text())
    by_name = {child["name"]: child for child in tree["children"]}
    assert "lost" in by_name, sorted(by_name)
    assert "Product defects" not in by_name  # the failure found its kind's category
    leaves = _leaves(by_name["lost"])
    assert [(leaf["name"], leaf["status"]) for leaf in leaves] == [
        ("test_incident_holds", "failed")
    ]
