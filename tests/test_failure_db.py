"""The failure database, campaign records and their merge, on run folders written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.campaign.failures import FIXED_AFTER, Failure, FailureDB, failure_id
from lab.campaign.merge import merge_campaigns
from lab.campaign.plan import CampaignRequest, Cell
from lab.campaign.summary import CampaignSummary, read_campaign, replay_outcome, write_campaign
from lab.campaign.tasks import RunRecord
from lab.ground.errors import InputError, UsageError
from scenarios.catalog import scenario_named


def _run_folder(root: Path, seed: int, verdict: str, kinds: tuple[str, ...]) -> Path:
    """A finished run folder as the runner leaves it: spec.json and result.json."""
    folder = root / "runs" / "random" / f"20260101T000000Z-{seed}"
    folder.mkdir(parents=True)
    spec = scenario_named("random").spec(seed).to_json()
    (folder / "spec.json").write_text(json.dumps(spec))
    result = {"v": 2, "verdict": verdict, "violations": list(kinds), "reasons": ["r"]}
    (folder / "result.json").write_text(json.dumps(result))
    return folder


def test_a_held_run_is_no_failure_and_a_broken_one_is(tmp_path: Path) -> None:
    assert Failure.of_run(_run_folder(tmp_path, 1, "held", ())) is None
    folder = _run_folder(tmp_path, 2, "broken", ("lost",))
    failure = Failure.of_run(folder)
    assert failure is not None
    assert (failure.scenario, failure.seed, failure.violations) == ("random", 2, ("lost",))
    assert failure.durability == "NO_SYNC,NO_SYNC,SIMPLE_MAJORITY"
    assert failure.id == failure_id(json.loads((folder / "spec.json").read_text()))
    assert failure.status == "failing"


def test_the_id_ignores_the_labs_version_but_not_the_schedule() -> None:
    spec = scenario_named("random").spec(3).to_json()
    assert failure_id({**spec, "git_revision": "abc", "lab_version": "9"}) == failure_id(spec)
    moved = {**spec, "schedule": spec["schedule"][1:]}
    assert failure_id(moved) != failure_id(spec)


def test_record_replays_and_status(tmp_path: Path) -> None:
    db = FailureDB(tmp_path / "db")
    seen = Failure.of_run(_run_folder(tmp_path, 4, "broken", ("lost", "two-masters")))
    assert seen is not None
    _, new = db.record(seen)
    assert new and [f.id for f in db] == [seen.id]
    again, new = db.record(seen)
    assert not new and len(again.outcomes) == 1 and again.outcomes[0].reproduced
    updated = db.add_outcome(seen, "broken", ("two-masters",), "runs/x")
    assert updated.outcomes[-1].reproduced and updated.status == "failing"
    updated = db.add_outcome(seen, "broken", ("unavailable>bound",), "runs/y")
    assert not updated.outcomes[-1].reproduced and updated.status == "flaky"
    for _ in range(FIXED_AFTER):
        updated = db.add_outcome(seen, "held", (), "runs/z")
    assert updated.status == "fixed"
    assert db.get(seen.id[:5]).status == "fixed"  # kept on disk, by a prefix of its id
    raw = json.loads((tmp_path / "db" / f"random-{seen.id}.json").read_text())
    assert raw["status"] == "fixed" and raw["spec"]["seed"] == 4
    db.forget(db.get(seen.id))
    assert list(db) == []
    with pytest.raises(UsageError, match="no failure"):
        db.get(seen.id)


def test_a_damaged_record_is_named(tmp_path: Path) -> None:
    (tmp_path / "random-abc.json").write_text("{not json")
    with pytest.raises(InputError, match=r"random-abc\.json:1: not valid JSON: "):
        list(FailureDB(tmp_path))


def _record(number: int, verdict: str, kind: str = "fresh", **more: object) -> RunRecord:
    fields: dict[str, object] = {
        "number": number,
        "kind": kind,
        "scenario": "random",
        "target": "broker_ref",
        "backend": "process",
        "mode": "replicated-group",
        "seed": number,
        "verdict": verdict,
        "violations": () if verdict == "held" else ("lost",),
        "seconds": 20.0,
        "folder": None,
        **more,
    }
    return RunRecord(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("replays", "outcome"),
    [
        ([("broken", True)], "still failing"),
        ([("held", False), ("broken", True)], "flaky"),
        ([("held", False)] * FIXED_AFTER, "fixed"),
        ([("held", False)], "undecided"),
        ([("unknown", False)], "flaky"),
    ],
)
def test_a_failures_replays_in_one_word(replays: list[tuple[str, bool]], outcome: str) -> None:
    records = [
        _record(i, v, "replay", reproduced=r, failure="f") for i, (v, r) in enumerate(replays)
    ]
    assert replay_outcome(records) == outcome


def test_summary_counts_table_and_json(tmp_path: Path) -> None:
    request = CampaignRequest(budget_s=60, seed=1)
    cells, skipped = request.cells()
    summary = CampaignSummary.begin(request, cells, skipped)
    for record in (
        _record(1, "broken", "replay", failure="aaa", reproduced=True),
        _record(2, "held"),
        _record(3, "broken", failure="bbb", new_failure=True, folder="runs/random/x"),
        _record(4, "unknown", violations=("error",)),
    ):
        summary = summary.with_record(record)
    summary = summary.finished()
    assert summary.counts() == {"runs": 3, "held": 1, "broken": 1, "unknown": 1, "replays": 1}
    table = summary.table()
    assert table[1].split()[-5:] == ["3", "1", "1", "1", "20.0"]
    assert "failure aaa: still failing" in table
    assert any(line.startswith("new failure bbb: random") for line in table)
    write_campaign(tmp_path, summary)
    raw = read_campaign(tmp_path)
    assert raw["new_failures"] == ["bbb"] and raw["cells"][0]["scenario"] == "random"
    assert raw["replays"] == [{"failure": "aaa", "outcome": "still failing", "status": None}]
    assert [r["number"] for r in raw["runs"]] == [1, 2, 3, 4]


def test_merge_joins_shards_into_one_folder(tmp_path: Path) -> None:
    request = CampaignRequest(budget_s=60, seed=1)
    cells, skipped = request.cells()
    shards = []
    for index in (1, 2):
        folder = tmp_path / f"shard{index}"
        run = _run_folder(folder, index, "held", ())
        record = _record(1, "held", folder=str(run.relative_to(folder)))
        summary = CampaignSummary.begin(request, cells, skipped).with_record(record)
        write_campaign(folder, summary.finished())
        shards.append(folder)
    merged = merge_campaigns(shards, tmp_path / "night")
    assert [r.number for r in merged.records] == [1, 2]
    assert all((tmp_path / "night" / str(r.folder) / "spec.json").is_file() for r in merged.records)
    assert read_campaign(tmp_path / "night")["request"]["merged_from"] == [str(s) for s in shards]
    assert (shards[0] / "campaign.json").is_file()  # the shards are left as they were
    with pytest.raises(UsageError, match="not empty"):
        merge_campaigns(shards, tmp_path / "night")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "campaign.json").write_text('{"v": 99}')
    with pytest.raises(InputError, match=r"not a campaign\.json"):
        merge_campaigns([tmp_path / "bad"], tmp_path / "other")
    assert not (tmp_path / "other").exists()


def test_cells_of_records_match_requests() -> None:
    assert _record(1, "held").cell == Cell("random", "broker_ref", "process", "replicated-group")
