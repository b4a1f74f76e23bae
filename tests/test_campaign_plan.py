"""A campaign's request and draws: budgets and shards parsed, names checked, cells in a
fixed order with the reason each skipped one cannot run, and draws decided by the seed so
the shards of one night split one sequence."""

from __future__ import annotations

import datetime as dt
from itertools import islice
from pathlib import Path

import pytest
from conftest import run_lab

from lab.campaign.plan import CampaignRequest, Cell, Shard, nightly_seed, parse_budget
from lab.ground.errors import UsageError


@pytest.mark.parametrize(
    ("text", "seconds"), [("30m", 1800), ("90s", 90), ("1h", 3600), ("1h30m", 5400), ("45", 45)]
)
def test_budgets(text: str, seconds: float) -> None:
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["", "m", "3x", "5s", "-1m", "1m1h"])
def test_bad_budgets(text: str) -> None:
    with pytest.raises(UsageError):
        parse_budget(text)


def test_shards() -> None:
    assert Shard.parse("2/4") == Shard(2, 4) and str(Shard(2, 4)) == "2/4"
    for bad in ("0/2", "3/2", "a/b", "1", "1/2/3"):
        with pytest.raises(UsageError):
            Shard.parse(bad)


def test_names_are_checked_when_the_request_is_made() -> None:
    with pytest.raises(UsageError, match="unknown scenario 'nope'"):
        CampaignRequest(budget_s=60, seed=1, scenarios=("nope",))
    with pytest.raises(UsageError, match="unknown scenario 'incident'"):  # needs a file
        CampaignRequest(budget_s=60, seed=1, scenarios=("incident",))
    with pytest.raises(UsageError, match="unknown backend"):
        CampaignRequest(budget_s=60, seed=1, backends=("vm",))
    with pytest.raises(UsageError, match="--jobs 0"):
        CampaignRequest(budget_s=60, seed=1, jobs=0)


def test_cells_in_order_and_the_reason_for_each_skipped() -> None:
    request = CampaignRequest(
        budget_s=60,
        seed=1,
        scenarios=("random", "disk-full", "primary-failure"),
        backends=("process", "docker"),
        modes=("replicated-group", "active-passive"),
    )
    cells, skipped = request.cells()
    assert cells[0] == Cell("random", "broker_ref", "process", "replicated-group")
    assert Cell("random", "broker_ref", "docker", "active-passive") in cells
    assert Cell("disk-full", "broker_ref", "docker", "replicated-group") in cells
    assert Cell("disk-full", "broker_ref", "process", "replicated-group") in cells
    assert not any(s.startswith("disk-full · broker_ref · process · replicated") for s in skipped)
    assert any(
        s.startswith("primary-failure · broker_ref · process · replicated-group")
        and "active-passive mode only" in s
        for s in skipped
    )
    assert Cell("primary-failure", "broker_ref", "process", "active-passive") in cells


def test_a_target_whose_brokers_activate_themselves_runs_the_active_passive_twin() -> None:
    request = CampaignRequest(
        budget_s=60, seed=1, scenarios=("random", "master-failure"), targets=("artemis",)
    )
    cells, skipped = request.cells()
    assert cells == (Cell("random", "artemis", "process", "active-passive"),)
    assert len(skipped) == 1 and skipped[0].startswith("master-failure · artemis · process")
    assert "run it with --mode active-passive" in skipped[0]


def test_draws_are_the_seeds_and_shards_split_them() -> None:
    request = CampaignRequest(budget_s=60, seed=7, scenarios=("random", "master-failure"))
    cells, _ = request.cells()
    first = list(islice(request.draws(cells), 12))
    assert first == list(islice(request.draws(cells), 12))
    assert [d.number for d in first] == list(range(1, 13))
    assert [d.cell.scenario for d in first[:4]] == ["random", "master-failure"] * 2
    assert len({d.seed for d in first}) == 12
    shards = [
        list(
            islice(
                CampaignRequest(
                    budget_s=60, seed=7, scenarios=("random", "master-failure"), shard=Shard(i, 3)
                ).draws(cells),
                4,
            )
        )
        for i in (1, 2, 3)
    ]
    numbers = sorted(d.number for shard in shards for d in shard)
    assert numbers == list(range(1, 13))
    by_number = {d.number: d for d in first}
    assert all(by_number[d.number] == d for shard in shards for d in shard)
    other = CampaignRequest(budget_s=60, seed=8, scenarios=("random", "master-failure"))
    assert [d.seed for d in islice(other.draws(cells), 3)] != [d.seed for d in first[:3]]


def test_the_nightly_seed_is_the_date() -> None:
    assert nightly_seed(dt.date(2026, 11, 23)) == 20261123


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("campaign", "--budget", "soon"), "bad budget"),
        (("campaign", "--shard", "5/2"), "bad shard"),
        (("campaign", "--scenarios", "random,nope"), "unknown scenario 'nope'"),
        (("campaign", "--jobs", "0"), "--jobs 0"),
        (
            ("campaign", "--scenarios", "primary-failure", "--mode", "replicated-group"),
            "nothing to run",
        ),
        (("campaign", "merge"), "at least one campaign folder"),
        (("campaign", "mrege", "x"), "did you mean merge"),
        (("failures", "show"), "needs a failure's id"),
        (("failures", "show", "abc"), "no failure 'abc'"),
    ],
)
def test_bad_campaign_usage_is_one_line_and_starts_nothing(
    tmp_path: Path, argv: tuple[str, ...], says: str
) -> None:
    extra = ("--out", str(tmp_path / "c")) if argv[0] == "campaign" else ()
    result = run_lab(*argv, *extra, "--failures-dir", str(tmp_path / "db"), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lab: error: ") and says in lines[0]
    assert not (tmp_path / "c").exists() and not (tmp_path / "campaigns").exists()
