"""Schedules made of the patterns that break HA systems, inside `random`'s rule.

`random` draws each fault on its own, 1–3 s long, at uniform times: the mixes that studies of
real failures name as their triggers come up rarely. A pattern composes them on purpose:

- NEAT (OSDI 2018): most partition failures came from isolating a single node, most often
  the leader, while its clients still reach it, for longer than its timeouts;
- CrashTuner (SOSP 2019): crashes around the moments state changes hands — a new master in
  its first seconds, a node rejoining, a transfer, a promotion;
- lag then crash: a replica or backup trailing behind a slow link when the master dies.

Each pattern is a short plan from a moment `at`: which faults, on which role, for how long.
Lengths are drawn against the run's own timeouts (scenarios.random_timeouts: shorter and
longer than each), never fixed seconds. A pattern knows no particular bug: only the shapes
those studies report. Patterns follow one another until the load ends, each kept only when
the schedule so far still keeps `random`'s rule (scenarios.random_rule), so the prediction
stays "no acknowledged message lost" and a run that breaks is the broker's.

    pattern_schedule(spec, rng) → (schedule, names of the patterns it holds)
    PATTERNS                    → every pattern, by design
"""

from __future__ import annotations

import random

from lab.ground.faultops import FaultOp, canonical
from lab.ground.spec import RunSpec
from scenarios.base import fault_when, fault_window, uniform
from scenarios.random_faults import FIRST_AT_S, LAST_HEAL_BEFORE_END_S, SHORTEST_S
from scenarios.random_pattern_steps import Pattern, Step, quiet
from scenarios.random_patterns_ap import AP_PATTERNS
from scenarios.random_patterns_group import GROUP_PATTERNS
from scenarios.random_rule import rule_problem

__all__ = ["PATTERNS", "Pattern", "Step", "pattern_schedule", "patterns_for"]

TRIES = 16  # patterns tried before the schedule is left as it is

PATTERNS: tuple[Pattern, ...] = (*GROUP_PATTERNS, *AP_PATTERNS)


def patterns_for(spec: RunSpec) -> tuple[Pattern, ...]:
    """The patterns of the run's HA design that its target and backend can apply."""
    design = spec.group.mode
    manager = spec.group.is_active_passive and not spec.group.active_passive.self_activated
    return tuple(p for p in PATTERNS if p.design == design and (p.needs != "manager" or manager))


def _ops(steps: list[Step], first_id: int) -> list[FaultOp]:
    ops: list[FaultOp] = []
    for number, step in enumerate(sorted(steps, key=lambda s: s.start_s), start=first_id):
        start, length, fid = round(step.start_s, 3), round(step.length_s, 3), f"f{number}"
        if step.when is None:
            ops.extend(fault_window(step.fault, step.target, start, length, fid, **step.params))
        else:
            within = round(step.within_s, 3)
            ops.extend(
                fault_when(
                    step.when, within, step.fault, step.target, start, length, fid, **step.params
                )
            )
    return ops


def pattern_schedule(
    spec: RunSpec, rng: random.Random, weights: dict[str, float] | None = None
) -> tuple[tuple[FaultOp, ...], tuple[str, ...]]:
    """Patterns one after another from the load's first moment to its end, each kept only
    when the schedule so far keeps `random`'s rule; the schedule, and the names of the
    patterns in it in order. `weights`: each pattern's weight instead of its own."""
    patterns = patterns_for(spec)
    if not patterns:
        return (), ()
    last = spec.workload.duration_s - LAST_HEAL_BEFORE_END_S
    ops: list[FaultOp] = []
    names: list[str] = []
    at = FIRST_AT_S + uniform(rng, 0.0, 0.5)
    for _ in range(TRIES):
        if at >= last - SHORTEST_S:
            break
        pattern = rng.choices(
            patterns, weights=[(weights or {}).get(p.name, p.weight) for p in patterns]
        )[0]
        steps = [s for s in pattern.plan(spec, rng, at) if s.length_s >= SHORTEST_S]
        if not steps or max(s.end_s for s in steps) > last:
            continue
        candidate = canonical([*ops, *_ops(steps, len(ops) // 2 + 1)])
        if rule_problem(spec.with_schedule(candidate)) is not None:
            continue
        ops = list(candidate)
        names.append(pattern.name)
        at = round(max(s.end_s for s in steps) + quiet(spec, rng), 3)
    return canonical(ops), tuple(names)
