"""`random`'s rule checked on a whole schedule, whoever wrote it: the promise of
random_faults.py (no acknowledged message lost) holds for a schedule only if it keeps that
rule, so a schedule made some other way — mutated by a guided campaign, spliced from two
others — is judged by `random`'s prediction only when it passes here.

    rule_problem(spec) → None, or one line saying which fault breaks the rule and how

Every fault must be one of the vocabulary's kinds (random_vocabulary.py) that the run's target
and backend can apply, with parameters inside the vocabulary's bounds, healed inside the load
(from FIRST_AT_S to LAST_HEAL_BEFORE_END_S before its end). A fault that starts while others
last must be one the generator could have drawn beside them (`may_overlap`), naming nodes, not
roles, unless only faults that take no node out last. Faults that take a node out, or move the
master, follow one another with the quiet the generator leaves: QUIET_S in a replicated group
whose copies live in memory (NO_SYNC: a restarted node catches up, the others write out; with
every copy on disk a second node may go out at any time), AP_QUIET_S between brokers taken out
of an active-passive cluster (the manager restarts the broker and it is a ready backup again)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from faults.selectors import split_sides
from lab.ground.errors import UsageError
from lab.ground.faultops import FaultOp, ParamValue
from lab.ground.spec import RunSpec
from lab.ground.topology import split_node_link
from scenarios.random_faults import FIRST_AT_S, LAST_HEAL_BEFORE_END_S, SHORTEST_S, may_overlap
from scenarios.random_vocabulary import (
    AP_LIGHT,
    AP_OUT,
    GROUP_LIGHT,
    GROUP_OPERATOR,
    GROUP_OUT,
    MANAGER,
    VIP,
    Draw,
    available,
    below_election_timeout_ms,
    can_cut,
    inside_link_heartbeat_ms,
)

__all__ = ["AP_QUIET_S", "CRASH_LEAD_S", "QUIET_S", "Span", "draw_of", "rule_problem", "spans_of"]

QUIET_S = 1.0  # replicated group: from one fault that takes a node out to the next
AP_QUIET_S = 3.0  # active-passive: from one broker taken out to the next


@dataclass(frozen=True)
class Span:
    """A fault from its start to its heal (None: never healed)."""

    start: FaultOp
    end_s: float | None  # the latest the heal can come (a fault that waits for a trigger)
    after_s: float | None = None  # a triggered fault's heal: this long after it struck

    @property
    def length_s(self) -> float:
        """How long the fault lasts once it struck."""
        if self.after_s is not None:
            return self.after_s
        return float("inf") if self.end_s is None else self.end_s - self.start.at_s

    def lasts_at(self, t: float) -> bool:
        return self.start.at_s <= t < (self.end_s if self.end_s is not None else float("inf"))


def spans_of(schedule: tuple[FaultOp, ...]) -> list[Span]:
    """Each fault from its start to the latest its heal can come (a triggered fault may
    strike anywhere from its at_s to its deadline: the rule counts it as lasting all along)."""
    stops = {op.id: op for op in schedule if op.action == "stop"}
    starts = [op for op in schedule if op.action == "start"]
    return [
        Span(
            op,
            stops[op.id].at_s if op.id in stops else None,
            stops[op.id].after_s if op.id in stops else None,
        )
        for op in sorted(starts, key=lambda o: (o.at_s, o.id))
    ]


def _plain(params: Mapping[str, ParamValue]) -> dict[str, int | float | str]:
    return {k: v for k, v in params.items() if not isinstance(v, bool)}


def _between(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _node_or_role(spec: RunSpec, name: str) -> bool:
    roles = ("@master", *(f"@replica:{i}" for i in range(1, spec.topology.nodes)))
    return name in spec.topology.node_names or name in roles


def _latency(params: Mapping[str, ParamValue], bound_ms: int) -> bool:
    latency, jitter = params.get("latency_ms"), params.get("jitter_ms")
    if not _between(latency, 20, bound_ms) or not _between(jitter, 0, bound_ms):
        return False
    return isinstance(latency, int) and isinstance(jitter, int) and latency + jitter < bound_ms


def _alone(spec: RunSpec, sides: object, either_way: bool) -> str | None:
    """The node alone on one side of `sides` (the vocabulary's splits), or None."""
    if not isinstance(sides, str):
        return None
    try:
        a, b = split_sides(sides)
    except UsageError:
        return None
    if sorted(a + b) != sorted(spec.topology.node_names):
        return None
    if len(a) == 1:
        return a[0]
    return b[0] if either_way and len(b) == 1 else None


def _link_end(spec: RunSpec, name: str, light: bool) -> bool:
    """A node link's end: a node, or for a light fault (one that takes no node out, so the
    rule's count of nodes out is the same whichever node it lands on) a role selector too
    (`@master_to_@replica:1`: a straggler behind whichever node is master then)."""
    if name in spec.topology.node_names:
        return True
    if not light:
        return False
    index = name.partition(":")[2]
    return name in ("@master", "@replica") or (
        name.startswith("@replica:") and index.isdigit() and 0 < int(index) < spec.topology.nodes
    )


_Classifier = Callable[[RunSpec, FaultOp, Mapping[str, ParamValue]], tuple[str, Draw] | None]


def _node_fault(
    spec: RunSpec, op: FaultOp, params: Mapping[str, ParamValue]
) -> tuple[str, Draw] | None:
    ap = spec.group.is_active_passive
    if op.target == MANAGER and ap and op.fault in ("kill", "pause") and not params:
        return f"manager {op.fault}", Draw(op.fault, op.target, "light")
    if op.fault == "transfer_master" and not ap and not params:
        replicas = {f"@replica:{i}" for i in range(1, spec.topology.nodes)}
        return (
            ("transfer_master", Draw(op.fault, op.target, "operator"))
            if (op.target in replicas)
            else None
        )
    if op.fault == "full_gc" and not params:
        fine = op.target in (*spec.topology.node_names, "@master")
        return ("full_gc", Draw(op.fault, op.target, "light")) if fine else None
    nodes = () if "@" in op.target else (op.target,)
    if op.fault in _HOST_FAULTS and not ap and _node_or_role(spec, op.target):
        fine = _HOST_FAULTS[op.fault](params)
        return (op.fault, Draw(op.fault, op.target, "out", _plain(params), nodes)) if fine else None
    out = ("kill", "pause") if ap else ("kill", "graceful_stop", "pause", "isolate")
    if op.fault not in out or not _node_or_role(spec, op.target):
        return None
    if params and not (op.fault == "kill" and _host_crash(spec, params)):
        return None
    return op.fault, Draw(op.fault, op.target, "out", nodes=nodes, split=op.fault == "isolate")


def _host_crash(spec: RunSpec, params: Mapping[str, ParamValue]) -> bool:
    """A kill as a host's crash (`host: true`: its links cut first) counts as the kill alone,
    where the run's node links can be cut (the node is out either way)."""
    return set(params) == {"host"} and params["host"] is True and can_cut(spec)


def _signed(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= abs(value) <= high


def _drift(value: object) -> bool:
    return isinstance(value, float) and (0.5 <= value <= 0.95 or 1.05 <= value <= 2.0)


# The hosts backend's faults on one node (it may fall out of the majority), by their bounds.
_HOST_FAULTS: dict[str, Callable[[Mapping[str, ParamValue]], bool]] = {
    "netem": lambda p: (
        set(p) <= {"loss_pct", "duplicate_pct"}
        and _between(p.get("loss_pct", 0), 0, 30)
        and _between(p.get("duplicate_pct", 0), 0, 20)
        and any(p.values())
    ),
    "clock_jump": lambda p: (
        set(p) == {"offset_s", "monotonic"}
        and _signed(p["offset_s"], 5, 300)
        and p["monotonic"] is True
    ),
    "clock_drift": lambda p: (
        set(p) == {"rate", "monotonic"} and _drift(p["rate"]) and p["monotonic"] is True
    ),
    "clock_strobe": lambda p: (
        set(p) == {"delta_s", "period_s", "monotonic"}
        and _signed(p["delta_s"], 5, 60)
        and p["period_s"] == 1
        and p["monotonic"] is True
    ),
}


def _split(spec: RunSpec, op: FaultOp, params: Mapping[str, ParamValue]) -> tuple[str, Draw] | None:
    if op.target != "group" or set(params) != {"sides"}:
        return None
    alone = _alone(spec, params["sides"], op.fault == "one_way_partition")
    if alone is None:
        return None
    return op.fault, Draw(op.fault, op.target, "out", _plain(params), (alone,), split=True)


def _link_fault(
    spec: RunSpec, op: FaultOp, params: Mapping[str, ParamValue]
) -> tuple[str, Draw] | None:
    ap = spec.group.is_active_passive
    ends = split_node_link(op.target)
    if ends is not None:
        a, b = ends
        light = op.fault == "latency" or (ap and op.fault == "bandwidth")
        if a == b or not (_link_end(spec, a, light) and _link_end(spec, b, light)):
            return None
        kind = f"node {op.fault}"
        if op.fault == "latency":
            bound = inside_link_heartbeat_ms(spec) if ap else below_election_timeout_ms(spec)
            fine = set(params) == {"latency_ms", "jitter_ms"} and _latency(params, bound)
            return (kind, Draw(op.fault, op.target, "light", _plain(params))) if fine else None
        rate = params.get("rate_kbs")
        if op.fault == "bandwidth" and set(params) == {"rate_kbs"}:
            if ap:
                fine = _between(rate, 128, 512)
                return (kind, Draw(op.fault, op.target, "light", _plain(params))) if fine else None
            fine = _between(rate, 1, 16)
        elif op.fault == "reset_peer" and set(params) == {"timeout_ms"} and not ap:
            fine = _between(params["timeout_ms"], 0, 200)
        else:
            return None
        return (kind, Draw(op.fault, op.target, "out", _plain(params), (a, b))) if fine else None
    if ap:
        if op.target != VIP:
            return None
    elif not op.target.startswith("client_to_") or not _node_or_role(
        spec, op.target.removeprefix("client_to_")
    ):
        return None
    if op.target.startswith("client_to_@") and op.target != "client_to_@master":
        return None
    checks: dict[str, Callable[[], bool]] = {
        "latency": lambda: set(params) == {"latency_ms", "jitter_ms"} and _latency(params, 500),
        "bandwidth": lambda: set(params) == {"rate_kbs"} and _between(params["rate_kbs"], 4, 64),
        "reset_peer": lambda: (
            not ap and set(params) == {"timeout_ms"} and _between(params["timeout_ms"], 0, 500)
        ),
        "cut": lambda: not params,
    }
    check = checks.get(op.fault)
    if check is None or not check():
        return None
    return f"client {op.fault}", Draw(op.fault, op.target, "light", _plain(params))


_CLASSIFIERS: dict[str, _Classifier] = {
    "partition": _split,
    "one_way_partition": _split,
    "latency": _link_fault,
    "bandwidth": _link_fault,
    "reset_peer": _link_fault,
    "cut": _link_fault,
}


def draw_of(spec: RunSpec, op: FaultOp) -> tuple[str, Draw] | None:
    """The vocabulary's kind and the draw a fault's start is, or None when `random` could not
    have drawn it for this run (another kind, a target or parameter out of bounds, a kind the
    target or backend cannot apply)."""
    found = _CLASSIFIERS.get(op.fault, _node_fault)(spec, op, op.params)
    if found is None:
        return None
    kinds = (
        (*AP_OUT, *AP_LIGHT)
        if spec.group.is_active_passive
        else (*GROUP_OUT, GROUP_OPERATOR, *GROUP_LIGHT)
    )
    names = {k.name for k in available(spec, kinds)}
    return found if found[0] in names else None


def _where(span: Span) -> str:
    op = span.start
    return f"fault {op.id} ({op.fault} {op.target} at {op.at_s:g} s)"


CRASH_LEAD_S = 0.1  # a host's crash: its links cut this long before its process is killed


def _crash_companions(spans: list[Span]) -> set[int]:
    """The `isolate N` spans that are part of a host's crash: starting at most CRASH_LEAD_S
    before a `kill N` of the same target and healed with it. Nothing else is taken out (the
    node is out either way), so the rule counts the pair as the kill alone."""
    kills = [s for s in spans if s.start.fault == "kill" and s.start.when is None]
    found = set()
    for i, span in enumerate(spans):
        op = span.start
        if op.fault != "isolate" or op.when is not None or span.end_s is None:
            continue
        for kill in kills:
            lead = kill.start.at_s - op.at_s
            if (
                kill.start.target == op.target
                and -1e-9 <= lead <= CRASH_LEAD_S + 1e-9
                and kill.end_s is not None
                and abs(kill.end_s - span.end_s) <= 2e-3
            ):
                found.add(i)
    return found


def rule_problem(spec: RunSpec) -> str | None:
    """Why `spec`'s schedule breaks `random`'s rule (one line), or None when it keeps it."""
    spans = spans_of(spec.schedule)
    companions = _crash_companions(spans)
    spans = [s for i, s in enumerate(spans) if i not in companions]
    last = spec.workload.duration_s - LAST_HEAL_BEFORE_END_S
    draws: list[Draw] = []
    for span in spans:
        found = draw_of(spec, span.start)
        if found is None:
            return f"{_where(span)}: not a fault `random` draws for this run"
        draws.append(found[1])
        if span.end_s is None:
            return f"{_where(span)}: never healed"
        if span.start.at_s < FIRST_AT_S or span.end_s > last:
            return f"{_where(span)}: outside {FIRST_AT_S:g}–{last:g} s of the load"
        if span.length_s < SHORTEST_S - 1e-9:
            return f"{_where(span)}: shorter than {SHORTEST_S:g} s"
    for i, span in enumerate(spans):
        lasting = [
            draws[j] for j, other in enumerate(spans) if j != i and other.lasts_at(span.start.at_s)
        ]
        if not lasting:
            continue
        if draws[i].names_a_role and any(d.effect != "light" for d in lasting):
            return f"{_where(span)}: names a role while a fault that takes a node out lasts"
        if not may_overlap(draws[i], lasting, spec):
            return (
                f"{_where(span)}: may not start while {', '.join(d.fault for d in lasting)} lasts"
            )
    return _quiet_problem(spec, spans, draws)


def _quiet_problem(spec: RunSpec, spans: list[Span], draws: list[Draw]) -> str | None:
    """Faults that take a node out (or move the master) keep their distance."""
    ap = spec.group.is_active_passive
    in_memory = "NO_SYNC" in (spec.durability.master_sync, spec.durability.replica_sync)
    if not ap and not in_memory:
        return None  # every copy on disk: a second node may go out at any time (rule 2)
    quiet = AP_QUIET_S if ap else QUIET_S
    heavy = [s for s, d in zip(spans, draws, strict=True) if d.effect != "light"]
    for i, a in enumerate(heavy):  # in the order they start
        for b in heavy[i + 1 :]:
            assert a.end_s is not None  # every span is healed by now
            if b.start.at_s < a.end_s:
                if ap:
                    return f"{_where(b)}: a second broker out while {a.start.id} lasts"
                continue  # two at once: may_overlap's business
            if b.start.at_s - a.end_s < quiet - 1e-9:
                gap = b.start.at_s - a.end_s
                return f"{_where(b)}: {gap:.3g} s after {a.start.id} ends (at least {quiet:g} s)"
    return None
