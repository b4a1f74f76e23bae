"""From a nightly's `failures` artifact to this machine: `lab failures import ARTIFACT` joins
records made elsewhere (a folder, or a zip as a browser downloads it) into the local
database, nothing newer overwritten, paths made local; `lab failures reproduce ID` runs a
failure's spec here and says `reproduced` (exit 1) or `did not reproduce` (exit 4)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, run_lab

from lab.campaign.failure_import import LocalRuns, merge_records, read_records
from lab.campaign.failures import Failure, FailureDB, Outcome, failure_id
from lab.run.incident import load_incident
from scenarios.catalog import scenario_named

CI_RUN = "/__w/app/app/campaigns/night-process-1/runs/random/20261205T022301Z-{seed}"


def _failure(seed: int, *outcomes: tuple[str, str, bool]) -> Failure:
    """A failure record as a CI machine wrote it, with outcomes (at, verdict, reproduced)."""
    spec = scenario_named("random").spec(seed).to_json()
    return Failure(
        id=failure_id(spec),
        scenario="random",
        target="broker_ref",
        backend="process",
        mode="replicated-group",
        seed=seed,
        durability="NO_SYNC,NO_SYNC,SIMPLE_MAJORITY",
        verdict="broken",
        violations=("lost",),
        first_seen="2026-12-04T02:40:00Z",
        folder=CI_RUN.format(seed=seed),
        spec=spec,
        outcomes=tuple(
            Outcome(
                at, verdict, ("lost",) if verdict != "held" else (), again, CI_RUN.format(seed=1)
            )
            for at, verdict, again in outcomes
        ),
    )


def _artifact(root: Path, *failures: Failure) -> Path:
    root.mkdir(parents=True)
    for f in failures:
        (root / f"{f.scenario}-{f.id}.json").write_text(json.dumps(f.to_json()))
    return root


def _zipped(folder: Path) -> Path:
    path = folder.with_suffix(".zip")
    with zipfile.ZipFile(path, "w") as archive:
        for file in sorted(folder.glob("*.json")):
            archive.write(file, file.name)
    return path


def test_an_artifact_is_imported_into_a_fresh_database_with_local_paths(tmp_path: Path) -> None:
    first = _failure(11)
    second = _failure(12, ("2026-12-05T03:00:00Z", "broken", True))
    artifact = _artifact(tmp_path / "failures", first, second)
    runs = tmp_path / "campaign-process-1" / "runs" / "random" / "20261205T022301Z-11"
    runs.mkdir(parents=True)
    (runs / "spec.json").write_text("{}")
    db = FailureDB(tmp_path / "laptop" / ".lab" / "failures")
    merged = merge_records(
        db, read_records([_zipped(artifact)]), LocalRuns([tmp_path / "campaign-process-1"])
    )
    assert [(c.failure.seed, c.change) for c in merged] == [(11, "new"), (12, "new")]
    mine = {f.seed: f for f in db}
    assert mine[11].folder == str(runs.resolve())  # found in the downloaded campaign folder
    assert mine[12].folder == ""  # not on this machine: said, never a path that is not here
    assert CI_RUN.format(seed=12) in mine[12].source and "failures.zip" in mine[12].source
    assert mine[12].outcomes[0].folder == "" and mine[12].status == "failing"
    # The same artifact again changes nothing.
    again = merge_records(db, read_records([artifact]), LocalRuns([]))
    assert {c.change for c in again} == {"unchanged"}


def test_nothing_newer_is_overwritten_and_every_replay_is_kept(tmp_path: Path) -> None:
    db = FailureDB(tmp_path / "db")
    mine = _failure(
        21, ("2026-12-05T03:00:00Z", "broken", True), ("2026-12-06T03:00:00Z", "held", False)
    )
    db.save(mine)
    older = _failure(21, ("2026-12-05T03:00:00Z", "broken", True))
    merged = merge_records(db, read_records([_artifact(tmp_path / "old", older)]))
    assert [c.change for c in merged] == ["unchanged"]
    assert db.get(mine.id).outcomes == mine.outcomes and db.get(mine.id).status == "flaky"
    # Two shards that each replayed it once: both replays kept, in time order.
    other = _failure(
        21, ("2026-12-05T03:00:00Z", "broken", True), ("2026-12-07T03:00:00Z", "held", False)
    )
    merge_records(db, read_records([_artifact(tmp_path / "shard2", other)]))
    assert [o.at[:10] for o in db.get(mine.id).outcomes] == [
        "2026-12-05",
        "2026-12-06",
        "2026-12-07",
    ]


def test_a_version_1_record_reads_as_one_with_no_source(tmp_path: Path) -> None:
    raw = _failure(31).to_json()
    raw["v"] = 1
    del raw["source"]
    (tmp_path / "random-x.json").write_text(json.dumps(raw))
    (found,) = list(FailureDB(tmp_path))
    assert found.source == "" and found.to_json()["v"] == 2


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p / "missing", "no such folder or zip archive"),
        (lambda p: _artifact(p / "empty"), "no failure records in it"),
        (lambda p: _write(p / "bad.zip", "not a zip"), "not a zip archive"),
        (lambda p: _write(p / "f" / "random-1.json", "{}").parent, "not a failure record"),
        (lambda p: _write(p / "g" / "random-1.json", "{nope").parent, "not JSON"),
    ],
)
def test_a_bad_artifact_is_one_line_and_writes_nothing(
    tmp_path: Path, make: object, says: str
) -> None:
    good = _artifact(tmp_path / "good", _failure(41))
    bad = make(tmp_path)  # type: ignore[operator]
    db = tmp_path / "db"
    done = run_lab(
        "failures", "import", str(good), str(bad), "--failures-dir", str(db), cwd=tmp_path
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and says in lines[0], done.stderr
    assert not db.exists()  # the good artifact was not half-imported


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_import_prints_each_record_and_the_next_command(tmp_path: Path) -> None:
    artifact = _artifact(tmp_path / "failures", _failure(51))
    done = run_lab("failures", "import", str(artifact), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        lines[0].startswith("new ") and "seed=51" in lines[0] and "no run folder here" in lines[0]
    )
    assert lines[1] == "imported 1 record(s) into .lab/failures: 1 new, 0 joined, 0 unchanged"
    assert lines[2].endswith(" failures reproduce ID")
    listed = run_lab("failures", "list", cwd=tmp_path)
    assert "seed=51" in listed.stdout


@pytest.mark.processes
def test_a_failure_from_elsewhere_is_reproduced_here(tmp_path: Path) -> None:
    """A failure whose spec loses acknowledged messages (acknowledgement policy NONE, the
    master isolated then killed), recorded on another machine: imported from a zip into a
    fresh folder and run here, it comes back."""
    spec = load_incident(ROOT / "incidents" / "ack-none-crash.toml").to_json()
    failure = Failure(
        id=failure_id(spec),
        scenario=str(spec["scenario"]),
        target="broker_ref",
        backend="process",
        mode="replicated-group",
        seed=int(spec["seed"]),
        durability="NO_SYNC,NO_SYNC,NONE",
        verdict="broken",
        violations=("lost",),
        first_seen="2026-12-05T02:40:00Z",
        folder=CI_RUN.format(seed=11),
        spec=spec,
    )
    artifact = _zipped(_artifact(tmp_path / "ci" / "failures", failure))
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    imported = run_lab("failures", "import", str(artifact), cwd=laptop)
    assert imported.returncode == 0, imported.stderr
    done = run_lab("failures", "reproduce", failure.id[:8], cwd=laptop, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last == f"failure {failure.id}: reproduced 1/1 (lost)"
    result = json.loads((laptop / "runs" / "random" / "latest" / "result.json").read_text())
    assert "lost" in result["violations"]


def test_reproduce_refuses_a_bad_count_or_an_unknown_id(tmp_path: Path) -> None:
    artifact = _artifact(tmp_path / "failures", _failure(61))
    run_lab("failures", "import", str(artifact), cwd=tmp_path)
    for argv, says in (
        (("reproduce", "nope"), "no failure 'nope'"),
        (("reproduce", "--times", "0", "random"), "--times 0"),
        (("reproduce",), "needs a failure's id"),
    ):
        done = run_lab("failures", *argv, cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and says in lines[0], done.stderr
    assert not (tmp_path / "runs").exists()
