"""Fault operations as data: what a schedule says, before anything runs.

A planned fault is two operations sharing an id: `start` applies it, `stop`
heals it. Schedules are tuples of these, computed by a pure function of the
spec and a seeded `random.Random`, and written to the run folder first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

__all__ = ["TAKES_A_NODE_OUT", "Action", "FaultOp", "canonical", "ops_from_json"]

Action = Literal["start", "stop"]
# Fault kinds after which the node they hit serves no client until healed.
TAKES_A_NODE_OUT = frozenset(
    {"kill", "graceful_stop", "pause", "isolate", "disconnect", "remove_node"}
)
ParamValue = int | float | str | bool


@dataclass(frozen=True)
class FaultOp:
    """One planned step: at `at_s` seconds after the workload starts, start or stop a fault.

    Parameters:
        at_s: when, in seconds after the load started.
        action: `start` applies the fault, `stop` heals it.
        fault: the fault's name (docs/faults.md).
        target: a node, a role (`@master` …), a link or `group`, as for `fault_window`.
        id: the fault's id in the run; a start and its stop share it.
        params: the fault's own parameters.
    """

    at_s: float
    action: Action
    fault: str
    target: str
    id: str
    params: Mapping[str, ParamValue] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at_s": round(self.at_s, 3),
            "action": self.action,
            "fault": self.fault,
            "target": self.target,
            "params": dict(self.params),
        }

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> FaultOp:
        action = raw["action"]
        if action not in ("start", "stop"):
            raise ValueError(f"action must be start or stop, not {action!r}")
        return FaultOp(
            at_s=float(raw["at_s"]),
            action=action,
            fault=str(raw["fault"]),
            target=str(raw["target"]),
            id=str(raw["id"]),
            params=dict(raw.get("params") or {}),
        )


def canonical(ops: Iterable[FaultOp]) -> tuple[FaultOp, ...]:
    """A schedule as it is written and read back: times to the millisecond, in time order
    (operations at the same time keep their order). A schedule and its replay are equal."""
    return tuple(
        sorted((replace(op, at_s=round(op.at_s, 3)) for op in ops), key=lambda op: op.at_s)
    )


def ops_from_json(raw: list[Mapping[str, Any]]) -> tuple[FaultOp, ...]:
    return canonical(FaultOp.from_json(r) for r in raw)
