"""Mutations of `random` runs (lab.campaign.mutations) and what the guide keeps of them: any
mutation of any corpus entry either passes the spec checker (faults.schedule_check), the
target's preflight, `random`'s rule and the workload's bounds, or is discarded and counted
(Hypothesis, over seeds, targets, backends and both HA designs); each operator does what it
says; none is useless."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lab.campaign.guide as guide_module
from lab.campaign.candidates import candidate_problem, seed_spec
from lab.campaign.guide import CoverageGuide, Seen
from lab.campaign.mutations import OPERATORS, mutate
from lab.campaign.plan import CampaignRequest, Cell, Shard
from lab.campaign.windows import windows_of
from lab.campaign.workloads import KNOBS, draw_workload, mutate_workload, workload_problem
from lab.compose import parts_for
from lab.ground.spec import RunSpec, Workload
from lab.run.incident import validate_spec
from lab.targets.suite import refusal_check
from scenarios.random_rule import rule_problem

SEEDS = st.integers(min_value=0, max_value=2**63 - 1)
WHERE = (
    ("broker_ref", "process", "replicated-group"),
    ("broker_ref", "process", "active-passive"),
    ("qpid-broker-j", "process", "replicated-group"),
    ("qpid-broker-j", "docker", "replicated-group"),
)


def _accepted(spec: RunSpec, work_dir: Path) -> None:
    """Everything `lab run --spec` checks before it starts, and `random`'s own rule."""
    validate_spec(spec)  # faults.schedule_check
    refusal_check(
        spec, parts_for(spec.scenario, spec.backend, spec.target, spec.group.mode), work_dir
    )  # the target's group and the cluster's preflight
    assert rule_problem(spec) is None
    assert workload_problem(spec.workload) is None


@settings(max_examples=40, deadline=None)  # a busy machine is not a failure
@given(seed=SEEDS, where=st.sampled_from(WHERE), runs=st.integers(min_value=8, max_value=30))
def test_every_mutation_passes_the_checks_or_is_discarded_and_counted(
    seed: int, where: tuple[str, str, str], runs: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    target, backend, mode = where
    refused: list[str] = []
    idle: list[str] = []
    made: list[RunSpec] = []

    def check(spec: RunSpec) -> str | None:
        problem = candidate_problem(spec)
        if problem is not None:
            refused.append(problem)
        return problem

    real_mutate: Callable[..., RunSpec | None] = guide_module.mutate

    def counting(op: str, spec: RunSpec, *args: Any) -> RunSpec | None:
        out = real_mutate(op, spec, *args)
        if out is None or replace(out, seed=0) == replace(spec, seed=0):
            idle.append(op)
        return out

    request = CampaignRequest(
        budget_s=600, seed=seed % 1000, targets=(target,), backends=(backend,), modes=(mode,)
    )
    cells, _ = request.cells()
    guide = CoverageGuide(seed, Shard(1, 1), check)
    work_dir = tmp_path_factory.mktemp("probe")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(guide_module, "mutate", counting)
        rng = random.Random(seed)
        for number, draw in enumerate(islice(request.draws(cells), runs), start=1):
            proposal = guide.propose(number, draw)
            assert proposal.spec is not None
            made.append(proposal.spec)
            seen = frozenset(f"b{rng.randrange(30)}" for _ in range(4))
            guide.observe(Seen(number, draw.cell, seen))
    for spec in made:
        _accepted(spec, work_dir)
    assert sum(guide.discarded.values()) == len(refused) + len(idle)
    assert guide.stats()["arms"]["fresh"]["discarded"] == 0


@pytest.mark.parametrize("where", WHERE, ids=["-".join(w) for w in WHERE])
@pytest.mark.parametrize("operator", OPERATORS)
def test_no_operator_is_useless(operator: str, where: tuple[str, str, str]) -> None:
    """Over a few parents, each operator makes candidates the checks accept."""
    target, backend, mode = where
    cell = Cell("random", target, backend, mode)
    rng = random.Random(operator)
    kept = 0
    for seed in range(12):
        spec, other = seed_spec(cell, seed), seed_spec(cell, seed + 100)
        for _ in range(4):
            made = mutate(operator, spec, rng, other)
            kept += made is not None and made != spec and candidate_problem(made) is None
    assert kept >= 3, f"{operator} on {cell}: only {kept} of 48 candidates kept"


CELL = Cell("random", "broker_ref", "process", "replicated-group")


Shape = tuple[str, str, float, float | None, str]


def _windows(spec: RunSpec) -> list[Shape]:
    return [
        (w.fault, w.target, w.start_s, w.end_s, str(sorted(w.params.items())))
        for w in windows_of(spec.schedule)
    ]


def _diff(spec: RunSpec, made: RunSpec) -> tuple[list[Shape], list[Shape]]:
    """The windows only `spec` has, and those only `made` has (ids aside)."""
    before, after = _windows(spec), _windows(made)
    return [w for w in before if w not in after], [w for w in after if w not in before]


def _each(operator: str, count: int = 40) -> list[tuple[RunSpec, RunSpec, RunSpec]]:
    rng = random.Random(7)
    found = []
    for seed in range(count):
        spec, other = seed_spec(CELL, seed), seed_spec(CELL, seed + 500)
        made = mutate(operator, spec, rng, other)
        if made is not None:
            found.append((spec, made, other))
    assert len(found) >= count // 2
    return found


def _length(w: Shape) -> float:
    return round((w[3] or w[2]) - w[2], 3)


def test_shift_and_duration_move_one_window() -> None:
    for spec, made, _ in _each("shift"):
        gone, came = _diff(spec, made)
        if gone:  # (a shift clipped back to where it was changes nothing)
            ((f, t, start, _, p),), ((f2, t2, start2, _, p2),) = gone, came
            assert (f, t, p) == (f2, t2, p2) and start != start2
            assert _length(gone[0]) == _length(came[0]) or _length(came[0]) < _length(gone[0])
    for spec, made, _ in _each("duration"):
        gone, came = _diff(spec, made)
        if gone:
            assert len(gone) == len(came) == 1 and gone[0][:3] == came[0][:3]
            assert _length(gone[0]) != _length(came[0])


def test_remove_add_and_stack_change_the_faults() -> None:
    for spec, made, _ in _each("remove"):
        gone, came = _diff(spec, made)
        assert len(gone) == 1 and not came
    for spec, made, _ in _each("add"):
        gone, came = _diff(spec, made)
        assert not gone and len(came) == 1
    for spec, made, _ in _each("stack"):
        gone, came = _diff(spec, made)
        assert not gone and len(came) == 1
        start = came[0][2]
        assert any(w[2] < start < (w[3] or w[2]) for w in _windows(spec)), "not stacked"


def test_target_and_role_move_one_fault() -> None:
    for spec, made, _ in _each("target"):
        gone, came = _diff(spec, made)
        assert len(gone) == len(came) == 1 and gone[0][0] == came[0][0]
        assert gone[0][2:4] == came[0][2:4]  # the same kind, at the same time, elsewhere
        assert (gone[0][1], gone[0][4]) != (came[0][1], came[0][4])
    for spec, made, _ in _each("role"):
        gone, came = _diff(spec, made)
        assert len(gone) == len(came) == 1
        assert ("@" in gone[0][1]) != ("@" in came[0][1]), (gone, came)


def test_splice_and_workload() -> None:
    for spec, made, other in _each("splice"):
        ours, theirs = _windows(spec), _windows(other)
        mine = [w for w in _windows(made) if w in ours]
        taken = [w for w in _windows(made) if w not in ours]
        assert taken and all(w in theirs for w in taken)
        assert max(w[2] for w in mine) < min(w[2] for w in taken)
        assert made.workload in (spec.workload, other.workload)
    for spec, made, _ in _each("workload"):
        moved = [k for k in KNOBS if getattr(spec.workload, k) != getattr(made.workload, k)]
        assert len(moved) == 1 and made.schedule == spec.schedule


def test_workloads_stay_affordable() -> None:
    rng = random.Random(1)
    base = Workload(producers=2, consumers=1, rate=100.0, duration_s=18.0)
    drawn = [draw_workload(base, rng) for _ in range(300)]
    assert all(workload_problem(w) is None for w in drawn)
    assert base in drawn and len(set(drawn)) > 50
    assert all(w.duration_s == 18.0 for w in drawn)  # the load's length is never drawn
    for w in drawn[:100]:
        moved = mutate_workload(w, rng)
        assert moved is not None and workload_problem(moved) is None
        assert sum(getattr(w, k) != getattr(moved, k) for k in KNOBS) == 1
    assert "messages/s" in str(workload_problem(replace(base, producers=4, rate=200.0)))
    assert "KiB/s" in str(workload_problem(replace(base, size=32768, rate=150.0)))
    assert "workload.window" in str(workload_problem(replace(base, window=7)))
