"""Faults only a machine of the node's own can have: its clock and its network interface.

    clock_jump    target: a node; params offset_s (seconds, ±), monotonic (bool, default
                  false): the node's clock jumps by offset_s; heal: back to the real time
    clock_drift   target: a node; params rate (0.5–2, not 1), monotonic: the node's clock
                  runs at `rate` from now on; heal: back to the real time, at the real rate
    clock_strobe  target: a node; params delta_s, period_s (≥ 1), monotonic: the clock flips
                  between delta_s ahead and right every period_s; heal: right again
    netem         target: a node; params delay_ms, jitter_ms, loss_pct, duplicate_pct,
                  reorder_pct, corrupt_pct: what the node's host sends on the node's
                  interface is delayed, lost, duplicated, reordered, corrupted (tc netem);
                  heal: the interface's own queueing discipline back

Each needs its ability (`ClockSkewable`, `NetemShaped`): the hosts backend has both. The clock
is the node's process's own (libfaketime, from the node's start): the machine's clock and
other processes are never touched. `monotonic` says whether the node's monotonic clock moves
with its wall clock; a cluster that cannot do what a fault asks refuses it before anything
starts (a libfaketime that cannot leave the monotonic clock alone …). Every heal is idempotent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from faults.abilities import require_ability
from lab.ground.errors import UsageError
from lab.ground.faultops import FaultOp
from lab.ground.netem import netem_args

__all__ = [
    "CLOCK_FAULTS",
    "ClockDrift",
    "ClockJump",
    "ClockSkewable",
    "ClockStrobe",
    "Netem",
    "NetemShaped",
]

MAX_OFFSET_S = 10 * 365 * 86400.0


@runtime_checkable
class ClockSkewable(Protocol):
    def clock_refusal(self, monotonic: bool) -> str | None:
        """Why this cluster cannot move its nodes' clocks so (None: it can)."""
        ...

    def jump_clock(self, name: str, offset_s: float) -> None: ...

    def drift_clock(self, name: str, rate: float) -> None: ...

    def strobe_clock(self, name: str, delta_s: float, period_s: float) -> None: ...

    def reset_clock(self, name: str) -> None:
        """The node's clock right again (any strobe stopped); nothing to do when it is."""
        ...


@runtime_checkable
class NetemShaped(Protocol):
    def netem_refusal(self, params: Mapping[str, object]) -> str | None:
        """Why this cluster cannot shape its nodes' interfaces so (None: it can)."""
        ...

    def shape(self, name: str, params: Mapping[str, object]) -> None: ...

    def unshape(self, name: str) -> None:
        """The node's interface as it was; nothing to do when it is."""
        ...


def _number(op: FaultOp, name: str, default: float | None = None) -> float:
    raw = op.params.get(name, default)
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise UsageError(f"fault {op.id}: {op.fault} needs params.{name} (a number)")
    return float(raw)


def _monotonic(op: FaultOp) -> bool:
    raw = op.params.get("monotonic", False)
    if not isinstance(raw, bool):
        raise UsageError(f"fault {op.id}: params.monotonic is true or false")
    return raw


def _clock(cluster: object, kind: str) -> ClockSkewable:
    return require_ability(
        cluster, ClockSkewable, kind, "whose nodes' clocks can be moved (--backend ssh)"
    )


class _ClockFault:
    kind = "clock"

    def check(self, op: FaultOp) -> None:
        """The parameters' own sense (a UsageError)."""

    def preflight(self, cluster: object, op: FaultOp) -> None:
        self.check(op)
        refusal = _clock(cluster, self.kind).clock_refusal(_monotonic(op))
        if refusal is not None:
            raise UsageError(f"fault {op.id} ({self.kind}): {refusal}")

    def heal(self, cluster: object, op: FaultOp) -> None:
        _clock(cluster, self.kind).reset_clock(op.target)


class ClockJump(_ClockFault):
    kind = "clock_jump"

    def check(self, op: FaultOp) -> None:
        offset = _number(op, "offset_s")
        if offset == 0 or abs(offset) > MAX_OFFSET_S:
            raise UsageError(f"fault {op.id}: clock_jump offset_s is not 0, at most ten years")

    def apply(self, cluster: object, op: FaultOp) -> None:
        self.check(op)
        _clock(cluster, self.kind).jump_clock(op.target, _number(op, "offset_s"))


class ClockDrift(_ClockFault):
    kind = "clock_drift"

    def check(self, op: FaultOp) -> None:
        rate = _number(op, "rate")
        if not 0.5 <= rate <= 2.0 or rate == 1.0:
            raise UsageError(f"fault {op.id}: clock_drift rate is 0.5 to 2, not 1")

    def apply(self, cluster: object, op: FaultOp) -> None:
        self.check(op)
        _clock(cluster, self.kind).drift_clock(op.target, _number(op, "rate"))


class ClockStrobe(_ClockFault):
    kind = "clock_strobe"

    def check(self, op: FaultOp) -> None:
        delta, period = _number(op, "delta_s"), _number(op, "period_s", 2.0)
        if delta == 0 or abs(delta) > MAX_OFFSET_S:
            raise UsageError(f"fault {op.id}: clock_strobe delta_s is not 0, at most ten years")
        if not 1.0 <= period <= 3600.0:
            raise UsageError(
                f"fault {op.id}: clock_strobe period_s is 1 to 3600 (a node re-reads its "
                "clock's file at most every second)"
            )

    def apply(self, cluster: object, op: FaultOp) -> None:
        self.check(op)
        delta, period = _number(op, "delta_s"), _number(op, "period_s", 2.0)
        _clock(cluster, self.kind).strobe_clock(op.target, delta, period)


class Netem:
    kind = "netem"

    def _shaped(self, cluster: object) -> NetemShaped:
        return require_ability(
            cluster, NetemShaped, self.kind, "on machines of their own (--backend ssh)"
        )

    def preflight(self, cluster: object, op: FaultOp) -> None:
        netem_args(op.params)
        refusal = self._shaped(cluster).netem_refusal(op.params)
        if refusal is not None:
            raise UsageError(f"fault {op.id} (netem): {refusal}")

    def apply(self, cluster: object, op: FaultOp) -> None:
        self._shaped(cluster).shape(op.target, dict(op.params))

    def heal(self, cluster: object, op: FaultOp) -> None:
        self._shaped(cluster).unshape(op.target)


CLOCK_FAULTS = (ClockJump(), ClockDrift(), ClockStrobe())
