"""The repository's GitHub Actions workflows (.github/workflows/*.yml) pass actionlint.

actionlint (pinned: lab.reporting.actionlint.ACTIONLINT_VERSION) is built on first use with
`go install` into .lab/tools/bin; later runs only ask it its version. It checks the
workflow syntax, expressions and their types, the `needs` graph, the matrix, the inputs of
known actions (actions/checkout, cache, upload-artifact … at the pinned versions' metadata)
and script injection; it also runs shellcheck on every `run:` script when `shellcheck` is
on PATH (Debian's `shellcheck`) and skips those checks when it is not: the nightly workflow
passes both ways. Where Go is missing (or the build fails) the test skips saying why, except
under CI=true, where a linter that cannot run is a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import ROOT

from lab.ground.errors import SetupError
from lab.reporting.actionlint import ACTIONLINT_VERSION, actionlint_binary, lint, shellcheck_used

WORKFLOWS = ROOT / ".github" / "workflows"
NIGHTLY = WORKFLOWS / "nightly.yml"


def _actionlint() -> Path:
    try:
        return actionlint_binary(ROOT / ".lab" / "tools", print)
    except SetupError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"actionlint {ACTIONLINT_VERSION} cannot run under CI: {exc}")
        pytest.skip(f"actionlint {ACTIONLINT_VERSION} cannot be installed here: {exc}")


@pytest.mark.actionlint
def test_workflows_pass_actionlint() -> None:
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert NIGHTLY in files
    findings = lint(_actionlint(), files, cwd=ROOT)
    used = "with" if shellcheck_used() else "without"
    assert findings == [], f"actionlint {ACTIONLINT_VERSION} ({used} shellcheck):\n" + "\n".join(
        map(str, findings)
    )


@pytest.mark.actionlint
def test_actionlint_reports_a_broken_workflow(tmp_path: Path) -> None:
    """The lint really looks: a workflow with an unknown job in `needs` and an untrusted
    expression in a script are reported, each with its rule and line."""
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(
        "on: push\n"
        "jobs:\n"
        "  a:\n"
        "    needs: nowhere\n"
        "    runs-on: ubuntu-latest\n"
        "    steps:\n"
        '      - run: echo "${{ github.event.head_commit.message }}"\n',
        encoding="utf-8",
    )
    findings = lint(_actionlint(), [broken], cwd=tmp_path)
    assert {(f.kind, f.line) for f in findings} >= {("job-needs", 3), ("expression", 7)}


def test_nightly_never_hides_a_failure() -> None:
    """The night fails when a shard does: no step or job may swallow a status, and the
    report job, which runs always, ends by checking the shards' result."""
    text = NIGHTLY.read_text(encoding="utf-8")
    assert "continue-on-error" not in text
    assert "CAMPAIGN: ${{ needs.campaign.result }}" in text
    assert "--lab-campaign-shard" in text and "--alluredir" in text
