"""The night's steps around its shards, as the reusable workflow runs them: `lab nightly
plan` (one seed for every shard, every name checked before a shard starts) and `lab nightly
merge` (the shards' downloaded artifacts joined into one campaign folder and one failure
database), with what a workflow reads from them ($GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import run_lab

from lab.backends.toxiproxy import SERVER_VERSION
from lab.campaign.failures import Failure, FailureDB, Outcome, failure_id
from lab.campaign.plan import CampaignRequest, nightly_seed
from lab.campaign.summary import CampaignSummary, read_campaign, write_campaign
from lab.campaign.tasks import RunRecord
from lab.reporting.allure_cli import ALLURE_COMMANDLINE_VERSION
from scenarios.catalog import scenario_named


def _outputs(text: str) -> dict[str, str]:
    """The key=value lines a workflow reads."""
    pairs = (line.split("=", 1) for line in text.splitlines())
    return {p[0]: p[1] for p in pairs if len(p) == 2 and re.fullmatch(r"[a-z-]+", p[0])}


def test_the_plan_gives_the_nights_seed_shards_and_backends(tmp_path: Path) -> None:
    github_output = tmp_path / "github_output"
    github_output.write_text("earlier=1\n")
    done = run_lab(
        *("nightly", "plan", "--shards", "3", "--backends", "process,docker,ssh"),
        *("--scenarios", "random,master-failure", "--github-output", str(github_output)),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    printed = _outputs(done.stdout)
    assert printed == {
        "seed": str(nightly_seed()),  # the UTC date: every shard of the night agrees
        "count": "3",
        "shards": "[1,2,3]",
        "backends": '["process","docker"]',  # ssh needs a hosts file: said, and left out
        "allure-cli": ALLURE_COMMANDLINE_VERSION,
        "toxiproxy": SERVER_VERSION,  # what a campaign job builds
    }
    assert _outputs(github_output.read_text()) == {"earlier": "1", **printed}
    assert "skipped random · broker_ref · ssh" in done.stderr
    assert "2 campaign(s)" not in done.stderr and "6 campaign(s) of 30m" in done.stderr
    seeded = run_lab("nightly", "plan", "--seed", "7", "--shards", "1", cwd=tmp_path)
    assert _outputs(seeded.stdout)["seed"] == "7"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--shards", "0"), "--shards 0: give a number of shards from 1 to 16"),
        (("--shards", "17"), "--shards 17"),
        (("--scenarios", "nope"), "unknown scenario 'nope'"),
        (("--targets", "nope"), "unknown target 'nope'"),
        (("--backends", "cloud"), "unknown backend 'cloud'"),
        (("--budget", "soon"), "bad budget"),
        (("--seed", "x"), "seed"),
        (("--github-output", "/nonexistent/dir/out"), "--github-output"),
    ],
)
def test_a_bad_plan_is_one_line(tmp_path: Path, argv: tuple[str, ...], says: str) -> None:
    done = run_lab("nightly", "plan", *argv, cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("lab: error: ") and says in lines[0]
    assert done.stdout == ""


def _record(number: int, seed: int, verdict: str, folder: str | None, **more: object) -> RunRecord:
    return RunRecord(
        number=number, kind="fresh", scenario="random", target="broker_ref",
        backend="process", mode="replicated-group", seed=seed, verdict=verdict,
        violations=() if verdict == "held" else ("lost",), seconds=20.0, folder=folder,
        **more,  # type: ignore[arg-type]
    )  # fmt: skip


def _shard(downloads: Path, index: int, verdicts: list[str]) -> Path:
    """A shard's two artifacts as `actions/download-artifact` leaves them: its campaign
    folder (run folders and campaign.json) and its failure database."""
    folder = downloads / f"campaign-process-{index}"
    db = FailureDB(downloads / f"failures-process-{index}")
    request = CampaignRequest(budget_s=60, seed=20261205)
    cells, skipped = request.cells()
    summary = CampaignSummary.begin(request, cells, skipped)
    for number, verdict in enumerate(verdicts, start=1):
        seed = index * 100 + number
        run = folder / "runs" / "random" / f"20261205T0223{number:02d}Z-{seed}"
        run.mkdir(parents=True)
        spec = scenario_named("random").spec(seed).to_json()
        (run / "spec.json").write_text(json.dumps(spec))
        result = {"verdict": verdict, "violations": [] if verdict == "held" else ["lost"]}
        (run / "result.json").write_text(json.dumps(result))
        more: dict[str, object] = {}
        if verdict != "held":
            failure = Failure.of_run(run)
            assert failure is not None
            db.record(failure)
            more = {"failure": failure.id, "new_failure": True}
        relative = str(run.relative_to(folder))
        summary = summary.with_record(_record(number, seed, verdict, relative, **more))
    write_campaign(folder, summary.finished())
    return folder


def _known(db: FailureDB, seed: int, *outcomes: str) -> Failure:
    spec = scenario_named("random").spec(seed).to_json()
    failure = Failure(
        failure_id(spec), "random", "broker_ref", "process", "replicated-group", seed,
        "NO_SYNC,NO_SYNC,SIMPLE_MAJORITY", "broken", ("lost",), "2026-12-01T02:40:00Z",
        "/ci/runs/random/x", spec,
        tuple(Outcome(at, "broken", ("lost",), True, "/ci/y") for at in outcomes),
    )  # fmt: skip
    db.save(failure)
    return failure


def test_the_shards_are_joined_into_one_night(tmp_path: Path) -> None:
    downloads = tmp_path / "shards"
    _shard(downloads, 1, ["held", "held"])
    _shard(downloads, 2, ["held"])
    night_db = FailureDB(tmp_path / ".lab" / "failures")
    # Last night's failure, replayed by both shards' databases (each started from it).
    known = _known(night_db, 7)
    for index, at in ((1, "2026-12-05T02:50:00Z"), (2, "2026-12-05T02:51:00Z")):
        _known(FailureDB(downloads / f"failures-process-{index}"), 7, at)
    summary, github_output = tmp_path / "summary.md", tmp_path / "out"
    done = run_lab(
        *("nightly", "merge", str(downloads), "--out", str(tmp_path / "night")),
        *("--summary", str(summary), "--github-output", str(github_output)),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _outputs(github_output.read_text()) == {"merged": "true", "new-failures": "0"}
    raw = read_campaign(tmp_path / "night")
    assert [r["seed"] for r in raw["runs"]] == [101, 102, 201]
    assert all((tmp_path / "night" / r["folder"] / "spec.json").is_file() for r in raw["runs"])
    replays = [o.at for o in night_db.get(known.id).outcomes]
    assert replays == ["2026-12-05T02:50:00Z", "2026-12-05T02:51:00Z"]  # both shards' kept
    page = summary.read_text()
    assert page.startswith("### The night's campaign (seed 20261205)") and "random · " in page
    assert "merged 2 shard(s)" in done.stdout


def test_a_new_failure_or_a_shard_that_broke_off_fails_the_merge(tmp_path: Path) -> None:
    downloads = tmp_path / "shards"
    _shard(downloads, 1, ["held", "broken"])
    (downloads / "campaign-process-2" / "records").mkdir(parents=True)  # broke off
    done = run_lab(
        "nightly", "merge", str(downloads), "--out", str(tmp_path / "night"), cwd=tmp_path
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "new failure" in done.stdout
    assert "left out campaign-process-2: no campaign.json (the shard broke off)" in done.stdout
    assert _outputs(done.stdout) == {"merged": "true", "new-failures": "1"}
    (failure,) = list(FailureDB(tmp_path / ".lab" / "failures"))
    assert failure.seed == 102
    nothing = run_lab(
        "nightly", "merge", str(tmp_path / "empty"), "--out", str(tmp_path / "n2"), cwd=tmp_path
    )
    assert nothing.returncode == 2 and "no such folder" in nothing.stderr
    (tmp_path / "empty").mkdir()
    none = run_lab(
        "nightly", "merge", str(tmp_path / "empty"), "--out", str(tmp_path / "n3"), cwd=tmp_path
    )
    assert none.returncode == 1 and "no shard left a whole campaign folder" in none.stdout
    assert _outputs(none.stdout) == {"merged": "false", "new-failures": "0"}


def test_a_damaged_shard_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    downloads = tmp_path / "shards"
    _shard(downloads, 1, ["broken"])
    bad = downloads / "campaign-process-2"
    bad.mkdir()
    (bad / "campaign.json").write_text('{"v": 99}')
    db = tmp_path / ".lab" / "failures"
    done = run_lab(
        "nightly", "merge", str(downloads), "--out", str(tmp_path / "night"), cwd=tmp_path
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "not a campaign.json" in lines[0]
    assert not db.exists() and not (tmp_path / "night").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    again = run_lab(
        "nightly", "merge", str(downloads), "--out", str(tmp_path / "full"), cwd=tmp_path
    )
    assert again.returncode == 2 and "not empty" in again.stderr
