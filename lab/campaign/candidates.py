"""A guided campaign's specs: the one a cell's seed makes (as `lab run` makes it), and the
check a made-up spec must pass before it runs — everything `lab run --spec` refuses before
anything starts (the spec checker, the target's group and the cluster's preflight), `random`'s
rule, under which its prediction holds, and a workload the machine can afford.

    seed_spec(cell, seed)          → RunSpec
    directed_spec(cell, seed, weigh) → the seed's spec, its `random` schedule drawn with each
                                     kind of fault weighed by `weigh` instead
    candidate_problem(spec)        → None, or why the spec may not run (one line)
"""

from __future__ import annotations

import functools
import random
import tempfile
from dataclasses import replace
from pathlib import Path

from lab.campaign.plan import Cell
from lab.campaign.workloads import workload_problem
from lab.compose import parts_for
from lab.ground.errors import LabError
from lab.ground.spec import RunSpec
from lab.run.cluster import RunParts
from lab.targets.suite import refusal_check
from scenarios.random_faults import Weigh, active_passive_schedule, random_schedule
from scenarios.random_rule import rule_problem

__all__ = ["candidate_problem", "directed_spec", "seed_spec"]

_PROBE_DIR = Path(tempfile.gettempdir()) / "lab-guide-probe"  # named, never created


@functools.cache
def _parts(scenario: str, backend: str, target: str, mode: str) -> RunParts:
    return parts_for(scenario, backend, target, mode)


def seed_spec(cell: Cell, seed: int) -> RunSpec:
    """The spec `lab run SCENARIO --seed SEED` makes for the cell."""
    parts = _parts(cell.scenario, cell.backend, cell.target, cell.mode)
    spec = parts.scenario.spec(seed, backend=cell.backend, target=parts.target)
    return spec.with_target_settings(dict(cell.settings))


def directed_spec(cell: Cell, seed: int, weigh: Weigh) -> RunSpec:
    """The spec of a `random` cell's seed, its schedule drawn by `random`'s own generator
    from the same seed but with each kind of fault weighed by `weigh` (made for the load the
    scenario gives, as `lab run` makes it: a JVM target's restart allowance comes after)."""
    parts = _parts(cell.scenario, cell.backend, cell.target, cell.mode)
    base = seed_spec(cell, seed)
    own = replace(base.workload, duration_s=parts.scenario.workload.duration_s)
    draw = active_passive_schedule if base.group.is_active_passive else random_schedule
    return base.with_schedule(draw(replace(base, workload=own), random.Random(seed), weigh))


def candidate_problem(spec: RunSpec) -> str | None:
    """Why `spec` may not run as a guided run of `random`, or None when it may."""
    try:
        parts = _parts(spec.scenario, spec.backend, spec.target, spec.group.mode)
        refusal_check(spec, parts, _PROBE_DIR)
    except LabError as exc:
        return " ".join(str(exc).split())
    return rule_problem(spec) or workload_problem(spec.workload)
