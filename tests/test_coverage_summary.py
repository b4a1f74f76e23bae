"""Behaviour coverage as a campaign reports it (lab.campaign.coverage): counted once per cell,
the summary's growth line, cells that stopped finding anything new, the run (and schedule)
that first reached each failure with how the guide made it; `lab campaign merge` counting
the shards' behaviours again and carrying their corpora; and the benchmark's reading of a
campaign's coverage over time."""

from __future__ import annotations

import json
from pathlib import Path

from lab.bench.coverage import coverage_at
from lab.campaign.coverage import STALLED_AFTER, Coverage, read_points
from lab.campaign.guide_files import GuideFiles
from lab.campaign.merge import merge_campaigns
from lab.campaign.plan import CampaignRequest, Cell
from lab.campaign.summary import CampaignSummary, read_campaign, write_campaign
from lab.campaign.tasks import RunRecord
from lab.ground.files import write_json
from scenarios.catalog import scenario_named

GROUP = Cell("random", "broker_ref", "process", "replicated-group")
AP = Cell("random", "broker_ref", "process", "active-passive")


def test_behaviours_count_once_per_cell() -> None:
    coverage = Coverage()
    first = coverage.add(1, GROUP, "fresh", None, "held", ["a", "b"])
    again = coverage.add(2, GROUP, "shift", 1, "held", ["b", "c"])
    other = coverage.add(3, AP, "fresh", None, "held", ["a"])
    assert (first.new, first.behaviours, first.cell_behaviours) == (("a", "b"), 2, 2)
    assert (again.new, again.behaviours, again.cell_behaviours) == (("c",), 3, 3)
    assert (other.new, other.behaviours, other.cell_behaviours) == (("a",), 4, 1)


def _record(number: int, origin: str, parent: int | None, **fields: object) -> RunRecord:
    base: dict[str, object] = dict(
        number=number,
        kind="fresh",
        scenario="random",
        target="broker_ref",
        backend="process",
        mode="replicated-group",
        seed=number,
        verdict="held",
        violations=(),
        seconds=20.0,
        folder=None,
        origin=origin,
        parent=parent,
        started=f"2026-11-26T06:{number:02d}:00.000000Z",
    )
    base.update(fields)
    return RunRecord(**base)  # type: ignore[arg-type]


def _run_folder(root: Path, name: str) -> str:
    folder = root / "runs" / "random" / name
    folder.mkdir(parents=True)
    spec = scenario_named("random").spec(3)
    write_json(folder / "spec.json", spec.to_json())
    return str(folder.relative_to(root))


def _summary(root: Path, finding: int = 2, quiet: int = STALLED_AFTER) -> CampaignSummary:
    """Runs 1–3, then `finding` runs that each find something, then `quiet` that do not."""
    request = CampaignRequest(budget_s=600, seed=1, guide="coverage")
    cells, skipped = request.cells()
    summary = CampaignSummary.begin(request, cells, skipped)
    coverage = Coverage()
    folder = _run_folder(root, "20261126T060300Z-3")
    plan = [(1, "fresh", None), (2, "stack", 1), (3, "workload", 2)]
    plan += [(n, "shift", 1) for n in range(4, 4 + finding + quiet)]
    for number, origin, parent in plan:
        broken = number == 3
        record = _record(
            number,
            origin,
            parent,
            verdict="broken" if broken else "held",
            violations=("lost",) if broken else (),
            failure="abc123" if broken else None,
            new_failure=broken,
            folder=folder if broken else None,
        )
        features = [f"f{min(number, 3 + finding)}", "common"]
        summary = summary.with_record(
            record, coverage.add(number, GROUP, origin, parent, record.verdict, features)
        )
    return summary.finished(
        guide={
            "guide": "coverage",
            "corpus": 5,
            "arms": {
                "fresh": {"runs": 1, "paid": 1, "discarded": 0},
                "shift": {"runs": 7, "paid": 2, "discarded": 3},
            },
        }
    )


def test_the_summary_shows_growth_stalled_cells_and_where_failures_came_from(
    tmp_path: Path,
) -> None:
    summary = _summary(tmp_path)
    lines = summary.table(tmp_path)
    assert (
        "coverage: 6 distinct behaviours (2 after 1, 3 after 2, 5 after 4, 6 after 8, "
        "6 after 10 runs)" in lines
    )
    assert any(
        line.startswith(
            f"cell {GROUP}: 6 behaviours in 10 runs; stalled: nothing new in its "
            f"last {STALLED_AFTER} runs"
        )
        for line in lines
    ), lines
    failure = next(line for line in lines if line.startswith("failure abc123"))
    assert "first reached by run 3 (workload of stack of fresh run 1)" in failure
    assert "f1 " in failure and " s" in failure  # the schedule, window by window
    assert "guide: corpus of 5 runs; paid/runs by arm: fresh 1/1, shift 2/7 (3 discarded)" in lines
    assert "[3] run (workload of 2) random" in summary.line(summary.records[2])
    raw = summary.to_json()
    assert raw["coverage"]["behaviours"] == 6 and raw["coverage"]["cells"] == {str(GROUP): 6}
    assert raw["coverage"]["after_runs"][:3] == [[1, 2], [2, 3], [3, 4]]
    assert raw["request"]["guide"] == "coverage" and raw["guide"]["corpus"] == 5
    assert raw["runs"][1]["origin"] == "stack" and raw["runs"][1]["parent"] == 1


def test_a_cell_still_finding_says_when_it_last_did(tmp_path: Path) -> None:
    lines = _summary(tmp_path, finding=6, quiet=STALLED_AFTER - 1).table(tmp_path)
    assert any(line.endswith("last new at run 9") for line in lines), lines
    assert not any("stalled" in line for line in lines)


def _campaign(root: Path, features: list[list[str]]) -> Path:
    """A guided campaign folder of len(features) runs: run 2 a mutation of run 1."""
    request = CampaignRequest(budget_s=600, seed=1, guide="coverage")
    cells, skipped = request.cells()
    summary = CampaignSummary.begin(request, cells, skipped)
    coverage = Coverage()
    files = GuideFiles(root)
    for number, shown in enumerate(features, start=1):
        folder = _run_folder(root, f"run{number}")
        parent = 1 if number == 2 else None
        origin = "shift" if parent else "fresh"
        record = _record(number, origin, parent, folder=folder)
        point = coverage.add(number, GROUP, origin, parent, "held", shown)
        summary = summary.with_record(record, point)
        with files.coverage.open("a") as out:
            out.write(json.dumps(point.to_json()) + "\n")
        if point.new:
            files.corpus.mkdir(exist_ok=True)
            write_json(
                files.corpus / f"{number}.json",
                {
                    "v": 1,
                    "run": number,
                    "parent": parent,
                    "origin": origin,
                    "folder": folder,
                    "new": list(point.new),
                    "spec": {},
                },
            )
    write_campaign(root, summary.finished())
    return root


def test_merge_counts_the_shards_behaviours_again_and_carries_their_corpora(
    tmp_path: Path,
) -> None:
    a = _campaign(tmp_path / "a", [["x", "y"], ["y", "z"]])
    b = _campaign(tmp_path / "b", [["x"], ["w"]])
    merged = merge_campaigns([a, b], tmp_path / "night")
    points = read_points(tmp_path / "night" / "coverage.jsonl")
    assert [(p.run, p.parent, p.new, p.behaviours) for p in points] == [
        (1, None, ("x", "y"), 2),
        (2, 1, ("z",), 3),
        (3, None, (), 3),  # b's x: seen in a already
        (4, 3, ("w",), 4),  # b's run 2, a mutation of b's run 1, now run 3
    ]
    assert merged.to_json()["coverage"]["behaviours"] == 4
    assert [r.parent for r in merged.records] == [None, 1, None, 3]
    corpus = {
        int(p.stem): json.loads(p.read_text())
        for p in (tmp_path / "night" / "corpus").glob("*.json")
    }
    assert sorted(corpus) == [1, 2, 3, 4]
    assert corpus[4]["parent"] == 3 and corpus[4]["folder"].startswith("runs/random/run2")
    assert (tmp_path / "night" / corpus[4]["folder"] / "spec.json").is_file()
    assert read_campaign(tmp_path / "night")["coverage"]["after_runs"][-1] == [4, 4]


def test_the_benchmark_reads_coverage_over_time(tmp_path: Path) -> None:
    root = _campaign(tmp_path / "c", [["a"], ["b", "c"], ["d"]])
    campaign = json.loads((root / "campaign.json").read_text())
    campaign["started"] = "2026-11-26T06:00:30Z"
    points = read_points(root / "coverage.jsonl")
    # Runs started at 06:01, 06:02, 06:03 and took 20 s each: ended 50, 110, 170 s in.
    assert [coverage_at(campaign, points, t) for t in (49, 50, 110, 169, 600)] == [0, 1, 3, 3, 4]
