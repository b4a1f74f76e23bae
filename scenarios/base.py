"""A scenario: frozen data, a pure schedule function, and the verdict the documents predict."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from clients.checker import CheckResult
from faults.ops import FaultOp
from lab.spec import Durability, RunSpec, Topology, Workload

__all__ = ["Prediction", "Scenario", "Verdict", "fault_window"]

Outcome = Literal["held", "broken", "unknown"]


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    reasons: tuple[str, ...]

    @property
    def held(self) -> bool:
        return self.outcome == "held"


@dataclass(frozen=True)
class Prediction:
    """What the documents predict for the run's messages.

    `loss` is "none" (no acknowledged message may be lost) or "detected" (the
    documents predict loss; the lab must see it). `duplicates_allowed` says whether
    a message may be delivered twice.
    """

    text: str
    loss: Literal["none", "detected"] = "none"
    duplicates_allowed: bool = True

    def judge(self, check: CheckResult) -> Verdict:
        reasons: list[str] = []
        if check.acknowledged == 0:
            return Verdict(
                "unknown", ("no message was acknowledged: the prediction was not tested",)
            )
        if check.unexpected.count:
            reasons.append(f"{check.unexpected.count} message(s) received that were never sent")
        if check.resurrected.count:
            reasons.append(f"{check.resurrected.count} refused message(s) were delivered")
        if not self.duplicates_allowed and check.duplicated.count:
            reasons.append(f"{check.duplicated.count} message(s) delivered more than once")
        if self.loss == "none":
            if check.lost.count and check.valid == "unknown" and not reasons:
                return Verdict(
                    "unknown",
                    (
                        f"{check.lost.count} acknowledged message(s) not received, "
                        "but the consumers could not drain the queue",
                    ),
                )
            if check.lost.count:
                reasons.append(f"{check.lost.count} acknowledged message(s) lost")
        elif check.lost.count == 0:
            reasons.append("the documents predict acknowledged loss here, and none was seen")
        return Verdict("broken", tuple(reasons)) if reasons else Verdict("held", ())


ScheduleFn = Callable[[RunSpec, random.Random], tuple[FaultOp, ...]]


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    prediction: Prediction
    schedule: ScheduleFn
    topology: Topology = field(default_factory=Topology)
    workload: Workload = field(default_factory=Workload)
    durability: Durability = field(default_factory=Durability)

    def spec(self, seed: int, *, backend: str = "process", target: str = "broker_ref") -> RunSpec:
        """The run spec for a seed, with the schedule computed from it (a pure function)."""
        base = RunSpec(
            scenario=self.name,
            seed=seed,
            target=target,
            backend=backend,
            topology=self.topology,
            durability=self.durability,
            workload=self.workload,
        )
        return base.with_schedule(self.schedule(base, random.Random(seed)))


def fault_window(
    fault: str,
    target: str,
    start_s: float,
    duration_s: float,
    fault_id: str,
    **params: int | float | str,
) -> tuple[FaultOp, FaultOp]:
    """A fault applied at `start_s` and healed `duration_s` later."""
    return (
        FaultOp(
            at_s=start_s, action="start", fault=fault, target=target, id=fault_id, params=params
        ),
        FaultOp(
            at_s=start_s + duration_s,
            action="stop",
            fault=fault,
            target=target,
            id=fault_id,
            params=params,
        ),
    )
