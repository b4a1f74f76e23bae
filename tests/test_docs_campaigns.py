"""docs/campaigns.md's recipes, each run by a test. Every code block of the page is a recipe
named by the comment before it (`<!-- recipe: NAME -->`), and each is checked as written:
here, quickly — every `lab` command it holds parses with the lab's own parser, every pytest
option is the plugin's, the incident is the file, the caller is the example's workflow —;
and with `--lab-long`, each shell recipe runs end to end in a folder of its own (the lab's
`.venv` beside it), its budgets shortened as SHORTER says and `gh run download` replaced by
a copy of a night's `failures` artifact (GitHub is not reachable from a test).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from lab.campaign.failures import Failure, failure_id
from lab.cli.main import _build_parser
from lab.cli.reference import pytest_options
from lab.run.incident import load_incident

PAGE = ROOT / "docs" / "campaigns.md"
RECIPE = re.compile(r"<!-- recipe: ([\w-]+) -->\n```(\w+)\n(.*?)\n```", re.DOTALL)
SHELL = ("replays", "campaigns", "failures", "pytest-session", "nightly-to-laptop", "local-night")
CHECKED = ("incident", "caller")  # compared with the files they show
# A minute or so: long enough for a run of `random` (18 s of load) to start and end in it on
# a busy machine, the pytest sessions' worker start-up included.
SHORTER = {
    "--budget 10m": "--budget 60s",
    "--budget 30m": "--budget 60s",
    "--budget 40m": "--budget 60s",
    "--lab-campaign 30m": "--lab-campaign 90s",
    "--lab-campaign 10m": "--lab-campaign 90s",
    "--times 5": "--times 2",
}
GH_DOWNLOAD = "gh run download RUN_ID -n failures -D nightly-failures"


def _recipes() -> dict[str, tuple[str, str]]:
    text = PAGE.read_text(encoding="utf-8")
    found = {name: (kind, body) for name, kind, body in RECIPE.findall(text)}
    assert text.count("\n```") == 2 * len(found), "a code block of the page is not a recipe"
    return found


def test_every_block_of_the_page_is_a_recipe_a_test_runs() -> None:
    assert sorted(_recipes()) == sorted(SHELL + CHECKED)


def _commands(body: str, program: str) -> list[list[str]]:
    """Every `.venv/bin/PROGRAM …` command of a shell recipe, its variables filled in."""
    joined = body.replace("\\\n", " ")
    found = []
    for line in joined.splitlines():
        for match in re.finditer(rf"\.venv/bin/{program} ([^|)#;]*)", line):
            text = re.sub(r"\$\{?(\w+)\}?|\$\(.*?\)", "X", match.group(1))
            found.append(shlex.split(text))
    return found


def test_every_command_of_the_recipes_is_one_the_lab_has() -> None:
    parser, _ = _build_parser()
    plugin = {names[0] for names, _ in pytest_options()} | {"--pyargs", "--alluredir"}
    counted = 0
    for name in SHELL:
        _, body = _recipes()[name]
        for words in _commands(body, "lab"):
            parser.parse_args(words)  # an unknown command or option: argparse exits 2
            counted += 1
        for words in _commands(body, "pytest"):
            assert words[:2] == ["--pyargs", "scenarios.test_campaign"], words
            unknown = {w for w in words if w.startswith("--") and w not in plugin}
            assert not unknown, f"{name}: options pytest's lab plugin lacks: {unknown}"
    assert counted >= 15


def test_the_incident_shown_is_the_file() -> None:
    _, body = _recipes()["incident"]
    path = ROOT / "incidents" / "slow-link-then-master-crash.toml"
    assert tomllib.loads(body) == tomllib.loads(path.read_text(encoding="utf-8"))
    load_incident(path)  # and it is an incident the lab runs (tests/test_incident.py runs it)


def test_the_caller_shown_is_the_examples_workflow() -> None:
    _, body = _recipes()["caller"]
    example = ROOT / "examples" / ".github" / "workflows" / "nightly.yml"
    assert yaml.safe_load(body) == yaml.safe_load(example.read_text(encoding="utf-8"))


def _failure_artifact(folder: Path) -> str:
    """A night's `failures` artifact holding one failure (acknowledgement policy NONE, the
    master isolated then killed: it loses acknowledged messages); its id."""
    spec = load_incident(ROOT / "incidents" / "ack-none-crash.toml").to_json()
    failure = Failure(
        failure_id(spec), "random", "broker_ref", "process", "replicated-group",
        int(spec["seed"]), "NO_SYNC,NO_SYNC,NONE", "broken", ("lost",),
        "2026-12-05T02:40:00Z", "/ci/campaigns/night/runs/random/x", spec,
    )  # fmt: skip
    folder.mkdir(parents=True)
    (folder / f"random-{failure.id}.json").write_text(json.dumps(failure.to_json()))
    return failure.id


def _run(body: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    for long, short in SHORTER.items():
        body = body.replace(long, short)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    return subprocess.run(
        ["bash", "-c", body], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=1800, check=False,
    )  # fmt: skip


@pytest.mark.long
@pytest.mark.processes
@pytest.mark.spark
@pytest.mark.allure
@pytest.mark.parametrize("name", SHELL)
def test_a_shell_recipe_runs_as_written(name: str, tmp_path: Path) -> None:
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    _, body = _recipes()[name]
    if name == "replays":  # the run folder the recipe names
        made = _run(".venv/bin/lab run random --seed 3", tmp_path)
        assert made.returncode in (0, 1), made.stderr[-2000:]
    if name in ("failures", "nightly-to-laptop"):
        source = (
            tmp_path / "artifact" if name == "nightly-to-laptop" else tmp_path / "nightly-failures"
        )
        found = _failure_artifact(source)
        body = body.replace(" ID", f" {found}")
        body = body.replace(GH_DOWNLOAD, f"cp -r {source} nightly-failures")
        assert GH_DOWNLOAD not in body or name != "nightly-to-laptop"
    done = _run(body, tmp_path)
    out = done.stdout
    said = out[-3000:] + done.stderr[-3000:]
    if name == "replays":
        assert out.count("replay: ") == 2 and "1/1" in out and "2/2" in out, said
    elif name == "campaigns":
        assert (tmp_path / "night" / "campaign.json").is_file(), said
        for folder in ("a", "b", "c"):
            raw = json.loads((tmp_path / "campaigns" / folder / "campaign.json").read_text())
            assert raw["counts"]["runs"] >= 1, (folder, raw["counts"])
    elif name in ("failures", "nightly-to-laptop"):
        assert f"failure {found}: reproduced 1/1 (lost)" in out, said
        assert ("forgot random-" in out) == (name == "failures"), said
    elif name == "pytest-session":
        (campaign,) = (tmp_path / "campaigns").glob("*-7-pytest")
        assert json.loads((campaign / "campaign.json").read_text())["request"]["seed"] == 7
        assert list((tmp_path / "allure-results").glob("*-result.json")), said
    else:  # local-night
        (night,) = (tmp_path / "nights").iterdir()
        assert (night / "night" / "campaign.json").is_file(), said
        assert (night / "night" / "report" / "report.html").is_file(), said
        assert (night / "night" / "allure-report" / "index.html").is_file(), said
        assert (tmp_path / ".lab" / "allure-history" / "history" / "history-trend.json").is_file()
        again = _run(body, tmp_path)  # the next night: a new folder, the Trend carried on
        assert len(list((tmp_path / "nights").iterdir())) == 2, again.stderr[-2000:]
    shutil.rmtree(tmp_path / "runs", ignore_errors=True)
