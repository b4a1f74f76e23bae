"""The mutation operators of a guided campaign: a `random` run's spec, changed a little, to
make the next run. Each is a pure function of the spec (and, for a splice, a second one) and
the guide's `random.Random`; what comes out is only a candidate, which the guide keeps only
when the spec checker, `random`'s rule and the target's preflight all accept it
(lab.campaign.guide).

    shift      a fault's window moved earlier or later (its length kept)
    duration   a fault's window made shorter or longer
    target     a fault moved to another node, link or side of the same kind
    role       a node named by role instead (@master, @replica:N), or the other way round
    add        a fault of the vocabulary added at a time of its own (kinds run least first)
    remove     a fault dropped
    stack      a fault added while another one lasts
    splice     this spec's faults before a moment, another's after it
    workload   one knob of the workload moved (lab.campaign.workloads)
    havoc      two to four of the above, one after the other (a bigger step)

    mutate(operator, spec, rng, other, seen) → RunSpec | None (None: nothing to apply it to)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from lab.campaign.windows import Window, schedule_of, windows_of
from lab.campaign.workloads import mutate_workload
from lab.ground.spec import RunSpec
from lab.ground.topology import client_link, node_link, split_node_link
from scenarios.random_faults import FIRST_AT_S, LAST_HEAL_BEFORE_END_S, SHORTEST_S
from scenarios.random_vocabulary import (
    AP_LIGHT,
    AP_OUT,
    GROUP_LIGHT,
    GROUP_OPERATOR,
    GROUP_OUT,
    Kind,
    available,
)

__all__ = ["LONGEST_S", "OPERATORS", "mutate"]

OPERATORS = (
    "shift",
    "duration",
    "target",
    "role",
    "add",
    "remove",
    "stack",
    "splice",
    "workload",
    "havoc",
)
LONGEST_S = 5.0  # a window is not made longer than this
OUT_CHANCE = 0.4  # that a stacked fault is one that takes a node out (as `random` draws)


@dataclass(frozen=True)
class _Context:
    other: RunSpec | None = None  # a splice's second spec
    seen: Mapping[str, int] = field(default_factory=dict)  # kind name → faults of it so far


_Operator = Callable[[RunSpec, random.Random, _Context], RunSpec | None]


def _last(spec: RunSpec) -> float:
    return spec.workload.duration_s - LAST_HEAL_BEFORE_END_S


def _renumbered(windows: list[Window]) -> tuple[Window, ...]:
    """The windows in the order they start, named f1, f2 … again."""
    ordered = sorted(windows, key=lambda w: (w.start_s, w.id))
    return tuple(replace(w, id=f"f{i}") for i, w in enumerate(ordered, start=1))


def _with_windows(spec: RunSpec, windows: list[Window]) -> RunSpec:
    return replace(spec, schedule=schedule_of(_renumbered(windows)))


def _placed(spec: RunSpec, start: float, length: float) -> tuple[float, float]:
    """A window of `length` moved inside the load's fault time, to the millisecond."""
    last = _last(spec)
    length = max(SHORTEST_S, min(length, last - FIRST_AT_S))
    start = min(max(start, FIRST_AT_S), last - length)
    return round(start, 3), round(start + length, 3)


def _pick(windows: list[Window], rng: random.Random) -> int | None:
    return rng.randrange(len(windows)) if windows else None


def _shift(spec: RunSpec, rng: random.Random, ctx: _Context) -> RunSpec | None:
    windows = windows_of(spec.schedule)
    i = _pick(windows, rng)
    if i is None or windows[i].end_s is None:
        return None
    w = windows[i]
    delta = rng.choice((-1, 1)) * rng.uniform(0.2, 2.5)
    start, end = _placed(spec, w.start_s + delta, (w.end_s or w.start_s) - w.start_s)
    windows[i] = replace(w, start_s=start, end_s=end)
    return _with_windows(spec, windows)


def _duration(spec: RunSpec, rng: random.Random, ctx: _Context) -> RunSpec | None:
    """A window made shorter or longer, from the same start."""
    windows = windows_of(spec.schedule)
    i = _pick(windows, rng)
    if i is None or windows[i].end_s is None:
        return None
    w = windows[i]
    longest = min(LONGEST_S, _last(spec) - w.start_s)
    length = min(longest, ((w.end_s or w.start_s) - w.start_s) * rng.uniform(0.4, 2.5))
    if length < SHORTEST_S:
        return None
    windows[i] = replace(w, end_s=round(w.start_s + length, 3))
    return _with_windows(spec, windows)


def _roles(spec: RunSpec) -> tuple[str, ...]:
    return ("@master", *(f"@replica:{i}" for i in range(1, spec.topology.nodes)))


def _other_target(w: Window, spec: RunSpec, rng: random.Random, by_role: bool) -> Window | None:
    """`w` on another target of the same kind: another node (or link, or side), or with
    `by_role` a node named by role instead, or a role by a node's name."""
    nodes = spec.topology.node_names
    ends = split_node_link(w.target)
    if w.fault in ("partition", "one_way_partition"):
        if by_role:
            return None
        alone = rng.choice(nodes)
        rest = ",".join(n for n in nodes if n != alone)
        flip = w.fault == "one_way_partition" and rng.random() < 0.5
        return replace(
            w, params={**w.params, "sides": f"{rest}|{alone}" if flip else f"{alone}|{rest}"}
        )
    if ends is not None:
        if by_role:
            return None
        a, b = rng.sample(list(nodes), 2)
        return replace(w, target=node_link(a, b))
    if w.target.startswith("client_to_"):
        now = w.target.removeprefix("client_to_")
        if by_role:
            choices = nodes if now.startswith("@") else ("@master",)
        else:
            choices = () if now.startswith("@") else nodes
        picked = [c for c in choices if c != now]
        return replace(w, target=client_link(rng.choice(picked))) if picked else None
    if w.target in ("manager", "client_vip", "group"):
        return None
    if w.fault == "transfer_master":
        picked = [r for r in _roles(spec)[1:] if r != w.target]
        return None if by_role or not picked else replace(w, target=rng.choice(picked))
    named = not w.target.startswith("@")
    roles = ("@master",) if w.fault == "full_gc" else _roles(spec)
    choices = nodes if named != by_role else roles  # by role: a node's name becomes a role
    picked = [c for c in choices if c != w.target]
    return replace(w, target=rng.choice(picked)) if picked else None


def _retarget(by_role: bool) -> _Operator:
    def operator(spec: RunSpec, rng: random.Random, ctx: _Context) -> RunSpec | None:
        windows = windows_of(spec.schedule)
        i = _pick(windows, rng)
        if i is None:
            return None
        moved = _other_target(windows[i], spec, rng, by_role)
        if moved is None:
            return None
        windows[i] = moved
        return _with_windows(spec, windows)

    return operator


def _vocabulary(spec: RunSpec, extra: bool) -> tuple[Kind, ...]:
    """What `random` draws first in a round (`extra` False), or while a fault lasts."""
    if spec.group.is_active_passive:
        return AP_LIGHT if extra else (*AP_OUT, *AP_LIGHT)
    if not extra:
        return available(spec, (*GROUP_OUT, GROUP_OPERATOR, *GROUP_LIGHT))
    return available(spec, tuple(k for k in GROUP_LIGHT if k.name != "full_gc"))


def _new_window(
    spec: RunSpec,
    rng: random.Random,
    kinds: tuple[Kind, ...],
    ctx: _Context,
    selectors: bool,
    start: float,
    length: float,
) -> Window | None:
    """A fault of one of `kinds`, drawn by the vocabulary's weights divided by one plus the
    faults of that kind the cell has run so far: kinds it has run least come first."""
    if not kinds:
        return None
    weights = [k.weight / (1 + ctx.seen.get(k.name, 0)) for k in kinds]
    kind = rng.choices(kinds, weights=weights)[0]
    draw = kind.draw(spec, rng, selectors)
    begin, end = _placed(spec, start, length)
    return Window("new", draw.fault, draw.target, begin, end, dict(draw.params))


def _add(spec: RunSpec, rng: random.Random, ctx: _Context) -> RunSpec | None:
    length = rng.uniform(1.0, 3.0)
    start = rng.uniform(FIRST_AT_S, _last(spec) - length)
    added = _new_window(spec, rng, _vocabulary(spec, False), ctx, True, start, length)
    return None if added is None else _with_windows(spec, [*windows_of(spec.schedule), added])


def _remove(spec: RunSpec, rng: random.Random, ctx: _Context) -> RunSpec | None:
    windows = windows_of(spec.schedule)
    if len(windows) < 2:
        return None  # a run with no fault tests nothing
    del windows[rng.randrange(len(windows))]
    return _with_windows(spec, windows)


def _stack(spec: RunSpec, rng: random.Random, ctx: _Context) -> RunSpec | None:
    windows = windows_of(spec.schedule)
    lasting = [w for w in windows if w.end_s is not None and w.end_s - w.start_s > 0.3]
    if not lasting:
        return None
    w = rng.choice(lasting)
    outs = () if spec.group.is_active_passive else available(spec, GROUP_OUT)
    kinds = outs if outs and rng.random() < OUT_CHANCE else _vocabulary(spec, True)
    start = rng.uniform(w.start_s + 0.1, (w.end_s or w.start_s) - 0.1)
    length = min(rng.uniform(1.0, 3.0), _last(spec) - start)  # it starts while `w` lasts
    if length < SHORTEST_S:
        return None
    stacked = _new_window(spec, rng, kinds, ctx, False, start, length)
    return None if stacked is None else _with_windows(spec, [*windows, stacked])


def _splice(spec: RunSpec, rng: random.Random, ctx: _Context) -> RunSpec | None:
    other = ctx.other
    if other is None:
        return None
    cut = rng.uniform(FIRST_AT_S + 1.0, _last(spec) - 1.0)
    before = [w for w in windows_of(spec.schedule) if w.start_s < cut]
    after = [w for w in windows_of(other.schedule) if w.start_s >= cut]
    if not before or not after:
        return None
    workload = spec.workload if rng.random() < 0.5 else other.workload
    return replace(_with_windows(spec, [*before, *after]), workload=workload)


def _workload(spec: RunSpec, rng: random.Random, ctx: _Context) -> RunSpec | None:
    moved = mutate_workload(spec.workload, rng)
    return None if moved is None else replace(spec, workload=moved)


def _havoc(spec: RunSpec, rng: random.Random, ctx: _Context) -> RunSpec | None:
    """Two to four operators in turn (a splice only when there is a second spec)."""
    ops = [op for op in _OPERATORS if op != "havoc" and (op != "splice" or ctx.other)]
    made: RunSpec | None = None
    for _ in range(rng.randint(2, 4)):
        step = _OPERATORS[rng.choice(ops)](made or spec, rng, ctx)
        made = step or made
    return made


_OPERATORS: dict[str, _Operator] = {
    "shift": _shift,
    "duration": _duration,
    "target": _retarget(by_role=False),
    "role": _retarget(by_role=True),
    "add": _add,
    "remove": _remove,
    "stack": _stack,
    "splice": _splice,
    "workload": _workload,
    "havoc": _havoc,
}


def mutate(
    operator: str,
    spec: RunSpec,
    rng: random.Random,
    other: RunSpec | None = None,
    seen: Mapping[str, int] | None = None,
) -> RunSpec | None:
    """`spec` changed by `operator` (`other`: a splice's second spec; `seen`: how many faults
    of each of the vocabulary's kinds the cell has run, so that `add` and `stack` favour the
    rarer); None when the operator has nothing to act on. The result is a candidate, not yet
    checked."""
    return _OPERATORS[operator](spec, rng, _Context(other, seen or {}))
