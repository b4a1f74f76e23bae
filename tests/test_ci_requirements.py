"""Under `CI=true` the suite installs Docker, Chromium, Java and Broker-J itself, so a test
that finds one of them missing fails, saying what was missing, instead of skipping; anywhere
else it skips with that reason. No package the lab depends on is import-skipped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.pytest_plugin import skip_unless_ci

ROOT = Path(__file__).resolve().parent.parent
SUITES = sorted([*ROOT.glob("tests/*.py"), *ROOT.glob("scenarios/*.py")])


def test_a_missing_tool_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no JDK"):
        skip_unless_ci("no JDK")
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception):
        skip_unless_ci("no JDK")


def test_a_missing_tool_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"CI=true, .*: no Docker engine answers"):
        skip_unless_ci("no Docker engine answers")


def _calls(pattern: str) -> list[str]:
    found = []
    for path in SUITES:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(pattern, line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_no_package_is_import_skipped() -> None:
    assert _calls(r"\bimportorskip\(") == []


def test_what_ci_installs_is_never_skipped_plainly() -> None:
    """A skip for Docker, Chromium, Java or Broker-J goes through skip_unless_ci."""
    needs = re.compile(r'pytest\.skip\(\s*f?"[^"]*(Docker|docker|chromium|JDK|Java|Broker-J|Maven)')
    plain = [str(p.relative_to(ROOT)) for p in SUITES if needs.search(p.read_text("utf-8"))]
    assert plain == []
    assert len(_calls(r"skip_unless_ci\(")) >= 8  # the tests that need them do call it


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert ci in readme, f".ci/run runs `{ci}`, which the README does not give"
    assert ci.startswith("scripts/bootstrap.sh --tests && ")
