"""The heals of the faults a nemesis applied, newest last: each pushed before its fault is
applied (so a half-applied fault is still healed), popped when its stop comes, and the rest
run newest first when the run ends (faults.nemesis)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lab.ground.faultops import FaultOp

__all__ = ["Heal", "HealStack"]


@dataclass(frozen=True)
class Heal:
    op: FaultOp
    run: Callable[[], None]


class HealStack:
    """Heals of applied faults, newest last; `heal_all` runs them newest first."""

    def __init__(self) -> None:
        self._heals: list[Heal] = []

    def push(self, op: FaultOp, heal: Callable[[], None]) -> None:
        self._heals.append(Heal(op, heal))

    def pending(self) -> tuple[FaultOp, ...]:
        return tuple(h.op for h in self._heals)

    def pop(self, fault_id: str) -> Heal | None:
        for i in range(len(self._heals) - 1, -1, -1):
            if self._heals[i].op.id == fault_id:
                return self._heals.pop(i)
        return None

    def pop_newest(self) -> Heal | None:
        return self._heals.pop() if self._heals else None
