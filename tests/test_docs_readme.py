"""The README stays a front page: at most 250 lines, the two set-up commands exactly, and
CI runs its test command."""

from __future__ import annotations

from docs_helpers import ROOT

RUN = "scripts/bootstrap.sh && .venv/bin/lab run single-node-crash"
TEST = "scripts/bootstrap.sh && .venv/bin/pytest -n auto"


def test_the_readme_is_short_and_gives_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the manual is docs/"
    assert RUN in lines and TEST in lines


def test_ci_runs_the_readmes_test_command() -> None:
    commands = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert commands[-1] == TEST
