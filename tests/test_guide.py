"""The coverage guide's decisions (lab.campaign.guide), without running anything: seeded, so
the same observations in the same order make the same proposals — also interleaved as
`--jobs 2` interleaves them, and replayed from guide.jsonl's lines; a run that reached new
behaviour joins the corpus and is mutated next; the bandit hears what paid; cells of other
scenarios run their seeds; `random` (the blind guide) only measures."""

from __future__ import annotations

import random
from collections import Counter
from itertools import islice
from pathlib import Path

import pytest
from conftest import run_lab

from lab.campaign.candidates import directed_spec, seed_spec
from lab.campaign.corpus import RECENT, Corpus, Entry
from lab.campaign.guide import (
    ARMS,
    WARMUP,
    BlindGuide,
    CoverageGuide,
    Guide,
    Proposal,
    Seen,
    make_guide,
)
from lab.campaign.guide_files import observe_line, propose_line, replay
from lab.campaign.plan import CampaignRequest, Shard
from lab.ground.errors import InputError, UsageError
from lab.ground.spec import RunSpec
from scenarios.catalog import scenario_named
from scenarios.random_rule import draw_of, rule_problem, spans_of

SHARD = Shard(1, 1)


def _cells(*scenarios: str, modes: tuple[str, ...] = ()) -> CampaignRequest:
    return CampaignRequest(budget_s=600, seed=3, scenarios=scenarios or ("random",), modes=modes)


def _behaviours(number: int, origin: str) -> frozenset[str]:
    """Made-up outcomes: each run shows a few behaviours, some new, as a cluster would."""
    rng = random.Random(f"{number} {origin}")
    return frozenset(f"b{rng.randrange(40)}" for _ in range(6))


def _drive(guide: Guide, request: CampaignRequest, runs: int, jobs: int) -> list[dict]:
    """Propose and observe as a campaign with `jobs` runs at once does (a run's outcome comes
    back once `jobs` runs are going); the log of what happened, in order."""
    cells, _ = request.cells()
    draws = iter(request.draws(cells))
    log: list[dict] = []
    going: list[Proposal] = []

    def finish(p: Proposal) -> None:
        seen = Seen(p.number, p.cell, _behaviours(p.number, p.origin), seconds=20.0 + p.number)
        guide.observe(seen)
        log.append(observe_line(seen))

    for number in range(1, runs + 1):
        proposal = guide.propose(number, next(draws))
        log.append(propose_line(proposal))
        going.append(proposal)
        if len(going) == jobs:
            finish(going.pop(0))
    for p in going:
        finish(p)
    return log


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_same_outcomes_in_the_same_order_make_the_same_specs(jobs: int) -> None:
    request = _cells(modes=("replicated-group", "active-passive"))
    first = _drive(CoverageGuide(3, SHARD), request, 30, jobs)
    again = _drive(CoverageGuide(3, SHARD), request, 30, jobs)
    assert first == again
    origins = {line["propose"]["origin"] for line in first if "propose" in line}
    assert "fresh" in origins and origins - {"fresh"}, "mutations should follow fresh draws"
    other_seed = _drive(CoverageGuide(4, SHARD), request, 30, jobs)
    assert other_seed != first
    other_shard = _drive(CoverageGuide(3, Shard(2, 2)), request, 30, jobs)
    assert other_shard != first


def test_a_log_replays_into_the_same_decisions_and_a_foreign_log_is_refused() -> None:
    request = _cells()
    log = _drive(CoverageGuide(3, SHARD), request, 20, 2)
    made = replay(CoverageGuide(3, SHARD), log)
    assert [propose_line(p) for p in made] == [line for line in log if "propose" in line]
    with pytest.raises(InputError, match="not its log"):
        replay(CoverageGuide(5, SHARD), log)
    tampered = [dict(line) for line in log]
    first_mutation = next(
        i
        for i, line in enumerate(tampered)
        if "propose" in line and line["propose"]["origin"] != "fresh"
    )
    tampered[first_mutation] = {
        "propose": {**tampered[first_mutation]["propose"], "spec": "0" * 12}
    }
    with pytest.raises(InputError):
        replay(CoverageGuide(3, SHARD), tampered)


def test_new_behaviour_joins_the_corpus_and_is_mutated_next() -> None:
    guide = CoverageGuide(3, SHARD)
    cells, _ = _cells().cells()
    draws = _cells().draws(cells)
    first = guide.propose(1, next(draws))
    assert first.origin in ("fresh", "pattern") and first.spec is not None  # nothing to mutate
    seen = guide.observe(Seen(1, first.cell, frozenset({"a", "b"}), "held", "runs/random/x"))
    assert seen.entry is not None and seen.entry.spec == first.spec
    assert seen.point.new == ("a", "b") and seen.point.behaviours == 2
    proposals = [guide.propose(n, d) for n, d in enumerate(islice(draws, 40), start=2)]
    mutated = [p for p in proposals if p.origin not in ("fresh", "directed", "pattern")]
    assert mutated and all(p.parent == 1 for p in mutated if p.origin != "splice")
    assert all(p.spec != first.spec for p in mutated)
    # Nothing new: no corpus entry; the arm that made it hears it did not pay.
    p = proposals[0]
    again = guide.observe(Seen(p.number, p.cell, frozenset({"a"})))
    assert again.entry is None and again.point.new == ()
    assert (first.origin, p.origin) == ("pattern", "pattern")  # the warm-up's turns
    arm = guide.stats()["arms"]["pattern"]
    assert (arm["runs"], arm["paid"]) == (2, 1)  # run 1 paid, this one did not


def test_cells_of_other_scenarios_run_their_seeds() -> None:
    request = _cells("master-failure", "random")
    guide = CoverageGuide(3, SHARD)
    cells, _ = request.cells()
    for number, draw in enumerate(islice(request.draws(cells), 6), start=1):
        proposal = guide.propose(number, draw)
        if draw.cell.scenario == "master-failure":
            assert (proposal.origin, proposal.spec, proposal.seed) == ("seed", None, draw.seed)
        else:
            assert proposal.origin in ARMS and proposal.spec is not None
        guide.observe(Seen(number, draw.cell, frozenset({f"x{number}"})))
    assert guide.corpus.keys() == {c for c in cells if c.scenario == "random"}


def test_a_run_the_guide_did_not_propose_counts_for_coverage_only() -> None:
    guide = CoverageGuide(3, SHARD)
    cell = _cells().cells()[0][0]
    seen = guide.observe(Seen(1, cell, frozenset({"lost"}), "broken", "runs/x"))
    assert seen.point.origin == "replay" and seen.entry is None and not guide.corpus
    assert all(a["runs"] == 0 for a in guide.stats()["arms"].values())


def test_the_blind_guide_runs_each_seed_and_only_measures() -> None:
    request = _cells()
    cells, _ = request.cells()
    guide = make_guide("random", 3, SHARD)
    assert isinstance(guide, BlindGuide)
    for number, draw in enumerate(islice(request.draws(cells), 3), start=1):
        p = guide.propose(number, draw)
        assert (p.origin, p.spec, p.seed) == ("seed", None, draw.seed)
        guide.observe(Seen(number, draw.cell, frozenset({"a", f"b{number}"})))
    assert guide.coverage.total == 4
    with pytest.raises(UsageError, match="unknown guide"):
        make_guide("mallory", 3, SHARD)


def test_arms_are_fresh_and_every_operator() -> None:
    assert ARMS[:3] == ("fresh", "directed", "pattern")
    assert set(ARMS[3:]) == {
        *("shift", "duration", "target", "role", "add", "remove", "stack", "splice"),
        *("workload", "havoc"),
    }


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_a_cells_first_runs_are_mostly_patterns_and_one_fresh_draw(seed: int) -> None:
    request = _cells()
    cells, _ = request.cells()
    guide = CoverageGuide(seed, SHARD)
    origins = []
    for number, draw in enumerate(islice(request.draws(cells), WARMUP), start=1):
        proposal = guide.propose(number, draw)
        origins.append(proposal.origin)
        if proposal.origin == "pattern":
            assert proposal.patterns  # a schedule of HA failure patterns, named
        guide.observe(Seen(number, draw.cell, frozenset({f"x{number}"})))
    # whatever the guide's seed: no bandit decides before it has seen both ways
    assert origins == ["pattern", "pattern", "fresh", "pattern"]
    assert len(guide.corpus[cells[0]]) == WARMUP


def test_an_unknown_guide_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown guide 'mallory'"):
        CampaignRequest(budget_s=60, seed=1, guide="mallory")
    result = run_lab(
        "campaign",
        "--guide",
        "mallory",
        "--budget",
        "1m",
        "--out",
        str(tmp_path / "c"),
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("lab: error: unknown guide 'mallory'")
    assert not (tmp_path / "c").exists()


def _entry(run: int, features: tuple[str, ...]) -> Entry:
    spec = scenario_named("random").spec(run)
    cell = _cells().cells()[0][0]
    return Entry(run, cell, spec, "fresh", None, features, None, features)


def test_the_corpus_mutates_its_frontier_most_and_pays_the_better_runs() -> None:
    corpus = Corpus()
    common, rare = _entry(1, ("a", "b")), _entry(2, ("a", "z"))
    for entry in (common, rare):
        corpus.add(entry)
    for _ in range(20):  # many runs show a and b; z was seen once
        corpus.seen(("a", "b"), 0)
    corpus.seen(("z",), 1)
    rng = random.Random(5)
    picked = Counter(corpus.pick(rng).run for _ in range(200))
    assert picked[2] > picked[1] > 0  # the rarer, but no entry takes all
    fresh = Corpus()
    assert fresh.paid(1) and not fresh.paid(0)
    for new in (40, 30, 20):
        fresh.seen((), new)
    assert not fresh.paid(10) and fresh.paid(30)  # early: only the better half pays
    for _ in range(RECENT):
        fresh.seen((), 0)
    assert fresh.paid(1) and not fresh.paid(0)  # later: anything new pays


def test_a_directed_draw_is_the_seeds_schedule_with_the_kinds_run_least_first() -> None:
    cell = _cells().cells()[0][0]
    same = directed_spec(cell, 11, lambda k: k.weight)
    assert same == seed_spec(cell, 11)  # the generator's own weights: the seed's own run

    def kinds(spec: RunSpec) -> Counter[str]:
        return Counter(
            found[0] for s in spans_of(spec.schedule) if (found := draw_of(spec, s.start))
        )

    plain, directed = Counter[str](), Counter[str]()
    for seed in range(60):
        plain += kinds(seed_spec(cell, seed))
        made = directed_spec(cell, seed, lambda k: k.weight / (1 + 50 * (k.name == "kill")))
        assert rule_problem(made) is None
        directed += kinds(made)
    assert plain["kill"] > 20 and directed["kill"] < plain["kill"] // 4
