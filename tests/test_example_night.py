"""The example project's night, played here step by step through the commands the reusable
workflow runs (.github/workflows/chaos-nightly.yml; the example calls it from
examples/.github/workflows/nightly.yml), with a short budget and two shards, in a virtual
environment of the example's own with the lab's `[nightly]` extra, outside the lab's checkout.

A bug is planted in the example's broker with the zoo's mechanism (zoo/ack-quorum-off-by-one
applied to the copy of the lab that is installed: the master counts its own copy twice, so it
acknowledges what no replica holds), so the night finds failures; then, on "the laptop" (a
fresh folder), the night's failure database is imported from its zip and a failure is run
again, and comes back:

    lab nightly plan --shards 2 …                          the seed, shards and backends
    pytest --pyargs scenarios.test_campaign … (shard 1, then shard 2)
    lab nightly merge shards --out night …                 exit 1: new failures
    lab report night/runs --out night/report                (Spark)
    lab allure allure-results --out night/allure-report --keep-history …   (Allure)
    lab failures import failures.zip                        (the laptop)
    lab failures reproduce ID                               reproduced

Long (minutes: two campaigns, Spark, Allure): run it with `--lab-long`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from example_venv import make_venv

from lab.backends.toxiproxy import find_server_binary
from lab.bench.zoo import ZOO_DIR, load_bug
from lab.ground.errors import SetupError
from lab.pytest_plugin import skip_unless_ci

BUDGET = "50s"
SCENARIOS = "example-failover,example-isolated-master"
BUG = "ack-quorum-off-by-one"


class _Night:
    """The commands of the night, each logged with its output."""

    def __init__(self, python: Path, tools: Path, log: Path) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL"))}
        path = f"{python.parent}{os.pathsep}{tools}{os.pathsep}/usr/sbin:/usr/bin:/sbin:/bin"
        self.env.update(PATH=path, CI="", GITHUB_ACTIONS="")
        self.log = log

    def __call__(
        self, cwd: Path, *argv: str, timeout: float = 900
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            list(argv), cwd=cwd, env=self.env, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip
        with self.log.open("a", encoding="utf-8") as out:
            out.write(f"\n$ {' '.join(argv)}    (in {cwd.name}/, exit {done.returncode})\n")
            out.write(done.stdout)
        return done


@pytest.mark.long
@pytest.mark.processes
@pytest.mark.spark
@pytest.mark.allure
def test_the_example_night_finds_a_planted_bug_and_a_laptop_reproduces_it(
    tmp_path: Path,
) -> None:
    for tool in ("java", "npm"):
        if shutil.which(tool) is None:
            skip_unless_ci(f"the night's reports need {tool} (Spark, Allure)")
    try:
        toxiproxy = Path(find_server_binary())
        python, repo = make_venv(tmp_path / "env", ("nightly",), load_bug(ZOO_DIR / f"{BUG}.toml"))
    except SetupError as exc:
        skip_unless_ci(str(exc))
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "toxiproxy-server").symlink_to(toxiproxy)
    night = _Night(python, tools, tmp_path / "night.log")

    # plan: the night's seed and shards, every name checked (the example's own entry points)
    planned = night(
        repo, "lab", "nightly", "plan", "--shards", "2", "--budget", BUDGET,
        "--scenarios", SCENARIOS, "--targets", "example-broker", "--backends", "process",
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    plan = dict(line.split("=", 1) for line in planned.stdout.splitlines())
    assert (plan["shards"], plan["backends"]) == ("[1,2]", '["process"]')

    # campaigns: each shard in turn, as its job runs it (in the repository's own folder, so
    # the example's pytest configuration, --lab-target example-broker, applies)
    for shard in (1, 2):
        ran = night(
            repo, "pytest", "--pyargs", "scenarios.test_campaign", "-p", "no:cacheprovider",
            "-n", "1", "--lab-campaign", BUDGET, "--lab-campaign-shard", f"{shard}/2",
            "--lab-campaign-seed", plan["seed"], "--lab-campaign-scenarios", SCENARIOS,
            "--lab-campaign-targets", "example-broker", "--lab-campaign-backends", "process",
            "--lab-campaign-mode", "", "--lab-campaign-out", f"shards/campaign-process-{shard}",
            "--lab-failures-dir", f"shards/failures-process-{shard}",
            "--alluredir", "allure-results",
        )  # fmt: skip
        assert ran.returncode in (0, 1), ran.stdout[-3000:] + ran.stderr[-3000:]
        assert (repo / "shards" / f"campaign-process-{shard}" / "campaign.json").is_file()

    # merge: the shards' folders and databases joined; the planted bug made new failures
    merged = night(
        repo, "lab", "nightly", "merge", "shards", "--out", "night",
        "--failures-dir", ".lab/failures", "--summary", "summary.md",
    )  # fmt: skip
    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert "merged=true" in merged.stdout and "new-failures=0" not in merged.stdout
    assert (repo / "summary.md").read_text().startswith("### The night's campaign")
    campaign = json.loads((repo / "night" / "campaign.json").read_text())
    broken = [r for r in campaign["runs"] if r["verdict"] == "broken"]
    assert broken and all("lost" in r["violations"] for r in broken), campaign["runs"]

    # the reports: Spark over the night's runs, Allure with its Trend kept for the next night
    report = night(repo, "lab", "report", "night/runs", "--out", "night/report", timeout=1800)
    assert report.returncode == 0, report.stderr[-3000:]
    assert (repo / "night" / "report" / "report.html").is_file()
    allure = night(
        repo, "lab", "allure", "allure-results", "--out", "night/allure-report",
        "--keep-history", ".lab/allure-history", timeout=1800,
    )  # fmt: skip
    assert allure.returncode == 0, allure.stderr[-3000:]
    assert (repo / ".lab" / "allure-history" / "history" / "history-trend.json").is_file()
    failed = [
        json.loads(p.read_text())
        for p in (repo / "allure-results").glob("*-result.json")
        if json.loads(p.read_text())["status"] == "failed"
    ]
    assert failed, "no failed campaign test in the Allure results"
    described = failed[0]["description"]
    assert "Reproduce this test" in described and " failures reproduce " in described
    assert ".venv/bin" not in described and "test_campaign.py::" not in described
    assert "lab run example-isolated-master --seed " in described  # the run's own line

    # the laptop: the night's database, as a browser downloads the `failures` artifact
    archive = tmp_path / "failures.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for record in sorted((repo / ".lab" / "failures").glob("*.json")):
            out.write(record, record.name)
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    imported = night(laptop, "lab", "failures", "import", str(archive))
    assert imported.returncode == 0, imported.stderr
    records = [json.loads(p.read_text()) for p in (laptop / ".lab" / "failures").glob("*.json")]
    # The folders are the CI machine's: here that machine is this one, so they are kept.
    assert records and all(r["source"] and Path(r["folder"]).is_dir() for r in records)
    chosen = next(r for r in records if r["scenario"] == "example-isolated-master")
    again = night(laptop, "lab", "failures", "reproduce", chosen["id"], timeout=600)
    assert again.returncode == 1, again.stdout + again.stderr[-3000:]
    assert again.stdout.strip().splitlines()[-1].startswith(f"failure {chosen['id']}: reproduced")
    print((tmp_path / "night.log").read_text())
