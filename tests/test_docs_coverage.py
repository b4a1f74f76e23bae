"""The manual keeps up with the code: every scenario, fault, benchmark, `lab` command and
violation kind has its place in docs/. A failure names what is missing and where it goes."""

from __future__ import annotations

import re

from docs_helpers import ROOT

from faults.catalog import FAULTS
from lab.bench.registry import BENCHMARKS
from lab.cli.main import _build_parser
from lab.reporting.allure_categories import violation_kinds
from scenarios.catalog import SCENARIOS


def _page(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def test_every_scenario_has_a_section_in_scenarios_md() -> None:
    headings = set(re.findall(r"^### `([\w-]+)`", _page("docs/scenarios.md"), re.MULTILINE))
    missing = sorted(set(SCENARIOS) - headings)
    assert not missing, f"docs/scenarios.md has no '### `NAME`' section for {missing}"
    unknown = sorted(headings - set(SCENARIOS))
    assert not unknown, f"docs/scenarios.md describes scenarios the lab does not have: {unknown}"


def test_every_fault_is_in_faults_md() -> None:
    page = _page("docs/faults.md")
    described = set(re.findall(r"^(?:\| |- )`(\w+)`", page, re.MULTILINE))
    missing = sorted(set(FAULTS) - described)
    assert not missing, f"docs/faults.md has no row '| `NAME` |' or item '- `NAME`' for {missing}"


def test_every_benchmark_has_a_section_in_benchmarks_md() -> None:
    headings = set(re.findall(r"^## ([\w-]+)$", _page("docs/benchmarks.md"), re.MULTILINE))
    missing = sorted(set(BENCHMARKS) - headings)
    assert not missing, f"docs/benchmarks.md has no '## NAME' section for {missing}"


def test_every_lab_command_is_in_cli_md() -> None:
    _parser, commands = _build_parser()
    page = _page("docs/cli.md")
    missing = sorted(c for c in commands if f"`lab {c}" not in page)
    assert not missing, f"docs/cli.md has no row for {['lab ' + c for c in missing]}"


def test_every_violation_kind_is_in_run_folder_md() -> None:
    page = _page("docs/run-folder.md")
    missing = sorted(k for k in (*violation_kinds(), "interrupted") if f"`{k}`" not in page)
    assert not missing, f"docs/run-folder.md's violation kinds lack {missing}"
