"""The campaign as a pytest session, from any folder (`pytest --pyargs
scenarios.test_campaign`): the session's own `--lab-target`, `--backend` and `--lab-mode`
apply to the campaign unless its own options name others, two that disagree are refused in
one line, and so are options a campaign cannot honour; the Allure line that reproduces a
campaign's failing test runs it from the failure database."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lab.ground.invocation import shown_command
from lab.pytest_campaign import campaign_choices, failure_command, rerun_line


class _Config:
    """What campaign_choices reads of a pytest config: its options' values."""

    DEFAULTS: dict[str, Any] = {
        "--lab-campaign-targets": "",
        "--lab-campaign-backends": "",
        "--lab-campaign-mode": "",
        "--lab-target": "broker_ref",
        "--backend": "process",
        "--lab-mode": None,
        "--lab-target-setting": None,
        "--lab-seeds": None,
    }

    def __init__(self, **given: Any) -> None:
        self.options = {
            **self.DEFAULTS,
            **{f"--{k.replace('_', '-')}": v for k, v in given.items()},
        }

    def getoption(self, name: str) -> Any:
        return self.options[name]


def _choices(**given: Any) -> dict[str, tuple[str, ...]]:
    return campaign_choices(_Config(**given))  # type: ignore[arg-type]


def test_the_sessions_own_choices_apply_to_the_campaign() -> None:
    assert _choices() == {"targets": ("broker_ref",), "backends": ("process",), "modes": ()}
    chosen = _choices(lab_target="example-broker", backend="docker", lab_mode="active-passive")
    assert chosen == {
        "targets": ("example-broker",),
        "backends": ("docker",),
        "modes": ("active-passive",),
    }
    own = _choices(lab_campaign_targets="artemis,broker_ref", lab_campaign_backends="docker")
    assert own["targets"] == ("artemis", "broker_ref") and own["backends"] == ("docker",)
    same = _choices(lab_target="artemis", lab_campaign_targets="artemis")
    assert same["targets"] == ("artemis",)


@pytest.mark.parametrize(
    ("given", "says"),
    [
        (
            {"lab_target": "example-broker", "lab_campaign_targets": "broker_ref"},
            "--lab-target example-broker and --lab-campaign-targets broker_ref disagree",
        ),
        (
            {"backend": "docker", "lab_campaign_backends": "process"},
            "--backend docker and --lab-campaign-backends process disagree",
        ),
        ({"lab_target_setting": ["a=b"]}, "--lab-target-setting is not applied to a campaign"),
        ({"lab_seeds": "3"}, "--lab-seeds is not applied to a campaign"),
    ],
)
def test_choices_a_campaign_cannot_honour_are_refused(given: dict[str, Any], says: str) -> None:
    with pytest.raises(pytest.UsageError, match=says):
        _choices(**given)


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "scenarios.test_campaign", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_from_a_folder_of_its_own_a_bad_choice_is_one_line(tmp_path: Path) -> None:
    """Outside the lab's checkout, with a pytest configuration of the user's own."""
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    for args, says in (
        (("--lab-target", "artemis", "--lab-campaign-targets", "broker_ref"), "disagree"),
        (("--lab-campaign-scenarios", "nope"), "unknown scenario 'nope'"),
        (("--lab-campaign-shard", "3/2"), "bad shard"),
    ):
        done = _pytest(tmp_path, "--lab-campaign", "30s", "--collect-only", *args)
        errors = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 4, done.stdout + done.stderr
        assert len(errors) == 1 and says in errors[0], done.stderr
    assert not (tmp_path / "campaigns").exists()
    skipped = _pytest(tmp_path, "-q", "-rs")
    assert skipped.returncode == 0 and "campaign runs only with --lab-campaign" in skipped.stdout


def test_a_campaign_collects_its_draws_from_any_folder(tmp_path: Path) -> None:
    done = _pytest(
        tmp_path,
        *("--lab-campaign", "30s", "--lab-campaign-seed", "5", "--collect-only", "-q"),
        *("--lab-campaign-scenarios", "single-node-crash", "-p", "no:cacheprovider"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    collected = [line for line in done.stdout.splitlines() if "test_campaign_run[" in line]
    assert collected and all("-single-node-crash-" in line for line in collected)


def test_a_failing_campaign_test_is_reproduced_from_the_failure_database(
    tmp_path: Path,
) -> None:
    lab = shown_command("lab")
    here = failure_command("abc123", Path(".lab/failures"), {})
    assert here == f"{lab} failures reproduce abc123"
    elsewhere = failure_command("abc123", tmp_path / "db", {})
    assert elsewhere.endswith(f"failures reproduce abc123 --failures-dir {tmp_path / 'db'}")
    github = {"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "99", "GITHUB_REPOSITORY": "me/app"}
    nightly = failure_command("abc123", Path(".lab/failures"), github)
    assert nightly == (
        "gh run download 99 -R me/app -n failures -D nightly-failures-99 && "
        f"{lab} failures import nightly-failures-99 && {lab} failures reproduce abc123"
    )


def test_a_campaign_test_is_reproduced_by_its_failure_or_by_its_runs_own_line(
    tmp_path: Path,
) -> None:
    from lab.campaign.tasks import RunRecord

    folder = tmp_path / "runs" / "random" / "x"
    folder.mkdir(parents=True)
    line = "lab run random --seed 5 --backend docker --mode active-passive"
    (folder / "result.json").write_text(json.dumps({"reproduce": line}))
    held = RunRecord(
        1, "fresh", "random", "broker_ref", "docker", "active-passive", 5, "held", (), 20.0,
        "runs/random/x",
    )  # fmt: skip
    assert rerun_line(held, tmp_path, Path(".lab/failures"), {}) == line
    failed = replace(held, verdict="broken", violations=("lost",), failure="abc123")
    assert rerun_line(failed, tmp_path, Path(".lab/failures"), {}).endswith(
        "failures reproduce abc123"
    )
    gone = replace(held, folder="runs/random/missing")
    assert rerun_line(gone, tmp_path, Path(".lab/failures"), {}) == ""
