"""The README stays a front page: at most 250 lines, with the two set-up commands exactly
(that CI runs the test command: tests/test_ci_requirements.py)."""

from __future__ import annotations

from docs_helpers import ROOT

RUN = "scripts/bootstrap.sh && .venv/bin/lab run single-node-crash"
TEST = "scripts/bootstrap.sh --tests && .venv/bin/pytest -n auto"


def test_the_readme_is_short_and_gives_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the manual is docs/"
    assert RUN in lines and TEST in lines
