"""Fault operations as data: what a schedule says, before anything runs.

A planned fault is two operations sharing an id: `start` applies it, `stop`
heals it. Schedules are tuples of these, computed by a pure function of the
spec and a seeded `random.Random`, and written to the run folder first.

A start may also wait for something the cluster does (`when`, one of TRIGGERS): from
`at_s` it is armed, and it strikes as soon as that happens, or `within_s` later at the
latest. Its stop then heals it `after_s` seconds after it struck; the stop's own `at_s` is
the latest that can be (`at_s + within_s + after_s` of the start), so a schedule read by time
alone never places a fault later than it can be.

    new-master   a node has become master that was not master when the step was armed
    catchup      a replica or backup is catching up: an active-passive backup in catch-up, a
                 replica of a group LAG_TXNS transactions or more behind its master
    rejoined     a node that was not a replica (down, cut off, waiting) has become one again
    caught-up    a node seen out or catching up since the step was armed has caught up: an
                 active-passive backup `ready`, a replica of a group back within LAG_TXNS
                 transactions of its master (the moment a node starts to count again)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

__all__ = [
    "LAG_TXNS",
    "TAKES_A_NODE_OUT",
    "TRIGGERS",
    "Action",
    "FaultOp",
    "canonical",
    "ops_from_json",
]

Action = Literal["start", "stop"]
# Fault kinds after which the node they hit serves no client until healed.
TAKES_A_NODE_OUT = frozenset(
    {"kill", "graceful_stop", "pause", "isolate", "disconnect", "remove_node"}
)
ParamValue = int | float | str | bool
TRIGGERS = ("new-master", "catchup", "rejoined", "caught-up")
LAG_TXNS = 20  # how far behind its master a replica counts as catching up


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
        when: a start only: what it waits for from `at_s` (one of TRIGGERS), or None.
        within_s: a start with `when`: how long it waits at most before it strikes anyway.
        after_s: the stop of a start with `when`: how long after it struck it is healed
            (its `at_s` is then the latest that can be).
    """

    at_s: float
    action: Action
    fault: str
    target: str
    id: str
    params: Mapping[str, ParamValue] = field(default_factory=dict)
    when: str | None = None  # a start: the trigger it waits for, from at_s (TRIGGERS)
    within_s: float = 0.0  # a start with `when`: how long it waits at most
    after_s: float | None = None  # the stop of a triggered start: how long after it struck

    def __post_init__(self) -> None:
        if self.when is not None:
            if self.action != "start" or self.when not in TRIGGERS:
                raise ValueError(
                    f"fault {self.id}: when {self.when!r} is for a start, one of "
                    f"{', '.join(TRIGGERS)}"
                )
            if not self.within_s > 0:
                raise ValueError(f"fault {self.id}: when needs within_s > 0 (how long it waits)")
        if self.after_s is not None and (self.action != "stop" or self.after_s < 0):
            raise ValueError(f"fault {self.id}: after_s is for a stop, and not negative")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "at_s": round(self.at_s, 3),
            "action": self.action,
            "fault": self.fault,
            "target": self.target,
            "params": dict(self.params),
        }
        if self.when is not None:  # (absent otherwise: schedules without triggers unchanged)
            out["when"] = self.when
            out["within_s"] = round(self.within_s, 3)
        if self.after_s is not None:
            out["after_s"] = round(self.after_s, 3)
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> FaultOp:
        action = raw["action"]
        if action not in ("start", "stop"):
            raise ValueError(f"action must be start or stop, not {action!r}")
        after = raw.get("after_s")
        return FaultOp(
            at_s=float(raw["at_s"]),
            action=action,
            fault=str(raw["fault"]),
            target=str(raw["target"]),
            id=str(raw["id"]),
            params=dict(raw.get("params") or {}),
            when=None if raw.get("when") is None else str(raw["when"]),
            within_s=float(raw.get("within_s") or 0.0),
            after_s=None if after is None else float(after),
        )


def canonical(ops: Iterable[FaultOp]) -> tuple[FaultOp, ...]:
    """A schedule as it is written and read back: times to the millisecond, in time order
    (operations at the same time keep their order). A schedule and its replay are equal."""
    return tuple(
        sorted(
            (
                replace(
                    op,
                    at_s=round(op.at_s, 3),
                    within_s=round(op.within_s, 3),
                    after_s=None if op.after_s is None else round(op.after_s, 3),
                )
                for op in ops
            ),
            key=lambda op: op.at_s,
        )
    )


def ops_from_json(raw: list[Mapping[str, Any]]) -> tuple[FaultOp, ...]:
    return canonical(FaultOp.from_json(r) for r in raw)
