"""The repository's GitHub Actions workflows (.github/workflows/*.yml, and the example
project's caller in examples/.github/workflows/) pass actionlint; the reusable nightly
workflow holds no logic of its own (every step of the night is one `lab` command, or the
campaign's pytest entry point, with options those commands have); its callers call it as
documented, the example at the lab's release tag.

actionlint (pinned: lab.reporting.actionlint.ACTIONLINT_VERSION) is built on first use with
`go install` into .lab/tools/bin; later runs only ask it its version. It checks the
workflow syntax, expressions and their types, the `needs` graph, the matrix, the inputs of
known actions and of the local reusable workflow a caller names, and script injection; it
also runs shellcheck on every `run:` script when `shellcheck` is on PATH (Debian's
`shellcheck`) and skips those checks when it is not: the workflows pass both ways. Where Go
is missing (or the build fails) the test skips saying why, except under CI=true, where a
linter that cannot run is a failure.
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT

from lab import __version__
from lab.cli.main import _build_parser
from lab.cli.reference import pytest_options
from lab.ground.errors import SetupError
from lab.reporting.actionlint import ACTIONLINT_VERSION, actionlint_binary, lint, shellcheck_used

WORKFLOWS = ROOT / ".github" / "workflows"
NIGHTLY = WORKFLOWS / "nightly.yml"
REUSABLE = WORKFLOWS / "chaos-nightly.yml"
EXAMPLE = ROOT / "examples" / ".github" / "workflows" / "nightly.yml"


def _actionlint() -> Path:
    try:
        return actionlint_binary(ROOT / ".lab" / "tools", print)
    except SetupError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"actionlint {ACTIONLINT_VERSION} cannot run under CI: {exc}")
        pytest.skip(f"actionlint {ACTIONLINT_VERSION} cannot be installed here: {exc}")


@pytest.mark.actionlint
def test_workflows_pass_actionlint() -> None:
    files = [*sorted(WORKFLOWS.glob("*.yml")), EXAMPLE]
    assert {NIGHTLY, REUSABLE, EXAMPLE} <= set(files)
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


def _load(path: Path) -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def _runs(workflow: dict[Any, Any]) -> list[tuple[str, str, str]]:
    """(job, step name, script) of every `run:` step."""
    return [
        (job, str(step.get("name", "")), str(step["run"]))
        for job, body in workflow["jobs"].items()
        for step in body.get("steps", ())
        if "run" in step
    ]


SAMPLE = {
    "SHARDS": "2", "BUDGET": "30m", "SCENARIOS": "random", "TARGETS": "broker_ref",
    "BACKENDS": "process", "MODES": "", "GITHUB_OUTPUT": "/tmp/o", "FAILURES_DIR": ".lab/f",
    "GITHUB_STEP_SUMMARY": "/tmp/s", "ALLURE_HISTORY": ".lab/h",
}  # fmt: skip


def _lab_words(script: str) -> list[str] | None:
    """A one-command script that runs `lab`: its words, the variables filled in."""
    words = shlex.split(" ".join(script.split()))
    if not words or words[0] != "lab":
        return None
    return [re.sub(r"\$(\w+)", lambda m: SAMPLE[m.group(1)], w) for w in words[1:]]


def _pytest_words(script: str) -> list[str]:
    """The campaign's pytest command, from the script the campaign job runs."""
    found = re.search(r"^\s*exec (pytest .*?)\n(?!\s+--)", script, re.DOTALL | re.MULTILINE)
    assert found, "the campaign job runs no `exec pytest …`"
    return shlex.split(found.group(1).replace("\\\n", " "))


def test_every_step_of_the_night_is_one_lab_command() -> None:
    """Set-up steps install (pip); every other step is one `lab` command that the lab's
    parser accepts, or the campaign's pytest entry point with options its plugin has."""
    parser, _ = _build_parser()
    used: set[tuple[str, ...]] = set()
    for job, name, script in _runs(_load(REUSABLE)):
        if script.startswith("python -m pip install "):
            assert "\n" not in script.strip(), f"{job}/{name}: one install line"
            continue
        if job == "campaign":
            words = _pytest_words(script)
            assert words[:3] == ["pytest", "--pyargs", "scenarios.test_campaign"], words
            plugin = {names[0] for names, _ in pytest_options()}
            given = {w for w in words if w.startswith("--lab")}
            assert given <= plugin, f"options the plugin lacks: {sorted(given - plugin)}"
            continue
        words = _lab_words(script)
        assert words is not None, f"{job}/{name} is not one `lab` command: {script!r}"
        parser.parse_args(words)  # an option the command lacks: argparse exits
        used.add(tuple(w for w in words[:2] if not w.startswith("-")))
    assert used == {("nightly", "plan"), ("nightly", "merge"), ("report", "night/runs"),
                    ("allure", "allure-results")}  # fmt: skip


def test_the_night_never_hides_a_failure() -> None:
    """The night fails when a shard does (pytest's status) or when the merge counts a new
    failure; no step swallows a status, and the reports still run after a red merge."""
    for path in (REUSABLE, NIGHTLY):
        assert "continue-on-error" not in path.read_text(encoding="utf-8")
    steps = {str(s.get("name")): s for s in _load(REUSABLE)["jobs"]["report"]["steps"]}
    merge = next(s for n, s in steps.items() if n.startswith("Merge the shards"))
    assert "||" not in merge["run"] and "; exit 0" not in merge["run"]
    later = [s for n, s in steps.items() if n.startswith(("Spark", "Allure", "Upload"))]
    assert later and all(("always()" in str(s.get("if"))) or "!cancelled()" in str(s.get("if"))
                         for s in later)  # fmt: skip
    assert (
        _load(REUSABLE)["jobs"]["report"]["if"]
        == "${{ always() && needs.plan.result == 'success' }}"
    )


def _inputs() -> dict[str, Any]:
    call = _load(REUSABLE)[True]["workflow_call"]  # YAML reads `on:` as True
    inputs: dict[str, Any] = call["inputs"]
    return inputs


def test_the_labs_own_nightly_calls_the_reusable_workflow() -> None:
    jobs = _load(NIGHTLY)["jobs"]
    assert set(jobs) == {"night", "newest-versions"}  # and the newest versions' own job
    job = jobs["night"]
    assert job["uses"] == "./.github/workflows/chaos-nightly.yml"
    assert job["with"]["lab-install"] == ".[nightly,docker]"  # the lab of this commit
    assert set(job["with"]) <= set(_inputs())
    assert job["with"]["backends"] == "process,docker"


def test_the_example_calls_it_at_the_labs_release_tag() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    repository = project["urls"]["Repository"].removeprefix("https://github.com/")
    (job,) = _load(EXAMPLE)["jobs"].values()
    tag = f"v{__version__}"
    assert job["uses"] == f"{repository}/.github/workflows/chaos-nightly.yml@{tag}"
    inputs = _inputs()
    assert set(job["with"]) <= set(inputs), sorted(set(job["with"]) - set(inputs))
    required = {name for name, spec in inputs.items() if spec.get("required")}
    assert required <= set(job["with"]) and job["with"]["lab-version"] == tag
    assert len(EXAMPLE.read_text(encoding="utf-8").split("\njobs:")[1].splitlines()) <= 12
    default = _load(REUSABLE)["env"]["LAB"]
    assert f"git+https://github.com/{repository}@{{0}}" in default  # the tag's own lab
