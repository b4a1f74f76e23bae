"""A scenario: frozen data, a pure schedule function, and the verdict the documents predict."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from lab.backends.catalog import make_target
from lab.ground.faultops import FaultOp
from lab.ground.spec import Durability, GroupSettings, RunSpec, Topology, Workload
from lab.judge.checker import CheckResult
from lab.judge.expectations import UNCHECKABLE, Expectation
from lab.judge.facts import BROKER_REF, RunFacts, TargetTraits, UnknownReference
from lab.judge.metrics import RunMetrics

__all__ = ["Prediction", "Scenario", "Verdict", "fault_window", "uniform"]

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
    """What the documents predict for a run.

    `loss` is "none" (no acknowledged message may be lost) or "detected" (the
    documents predict loss; the lab must see it). `duplicates_allowed` says whether
    a message may be delivered twice. `two_masters` is "forbidden" (never two nodes
    MASTER at once), "expected" (the documents predict a split brain) or "either".
    `expect` lists the rest (lab.judge.expectations): log codes, roles at the end,
    service stopped / continued / resumed around the faults.
    """

    text: str
    loss: Literal["none", "detected"] = "none"
    duplicates_allowed: bool = True
    two_masters: Literal["forbidden", "expected", "either"] = "either"
    expect: tuple[Expectation, ...] = ()
    refusals_expected: bool = False  # the broker must refuse some publishes (a full disk)

    def judge(
        self,
        check: CheckResult,
        events: Iterable[Mapping[str, Any]],
        metrics: RunMetrics,
        target: TargetTraits = BROKER_REF,
    ) -> Verdict:
        """The verdict with every reason it is not `held`. The target's election allowance
        is added to every bound on the service's return, its restart allowance to those
        counted from a node's restart. When the only reasons are expectations the
        target's logs cannot show, the verdict is `unknown`."""
        reasons: list[str] = []
        if check.acknowledged == 0:
            return Verdict(
                "unknown", ("no message was acknowledged: the prediction was not tested",)
            )
        if check.unexpected.count:
            reasons.append(f"{check.unexpected.count} message(s) received that were never sent")
        if check.resurrected.count:
            reasons.append(f"{check.resurrected.count} refused message(s) were delivered")
        if self.refusals_expected and check.failed == 0:
            reasons.append("no publish was refused, though the documents predict refusals")
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
        elif check.valid == "unknown" and not reasons:
            return Verdict(
                "unknown",
                (
                    f"{check.lost.count} acknowledged message(s) not received, but the "
                    "consumers could not drain the queue, so the loss is not established",
                ),
            )
        if self.two_masters == "forbidden" and metrics.two_masters_seen:
            reasons.append("two nodes were MASTER at the same time")
        elif self.two_masters == "expected" and not metrics.two_masters_seen:
            reasons.append("the documents predict two masters at once here, and none were seen")
        facts = RunFacts.gather(events, metrics, target)
        for expectation in self.expect:
            try:
                reason = expectation.unmet(facts)
            except UnknownReference as exc:
                reason = f"{expectation}: {exc}"
            if reason is not None:
                reasons.append(reason)
        if reasons and all(r.startswith(UNCHECKABLE) for r in reasons):
            return Verdict("unknown", tuple(reasons))
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
    group: GroupSettings = field(default_factory=GroupSettings)
    # When the prediction depends on the run's settings (e.g. the durability triplet).
    predict: Callable[[RunSpec], Prediction] | None = None
    # The backends whose clusters can apply every fault of the schedule.
    backends: tuple[str, ...] = ("process", "docker")

    def spec(
        self,
        seed: int,
        *,
        backend: str = "process",
        target: str = "broker_ref",
        durability: Durability | None = None,
    ) -> RunSpec:
        """The run spec for a seed, with the schedule computed from it (a pure function).

        A target whose nodes take longer to restart (a JVM) gets its `restart_allowance_s`
        added to the load after the schedule is made: the faults fall at the same moments, and
        the service has time to come back before the load ends."""
        base = RunSpec(
            scenario=self.name,
            seed=seed,
            target=target,
            backend=backend,
            topology=self.topology,
            durability=durability or self.durability,
            workload=self.workload,
            group=self.group,
        )
        scheduled = base.with_schedule(self.schedule(base, random.Random(seed)))
        extra = make_target(target).restart_allowance_s
        if not extra:
            return scheduled
        longer = replace(self.workload, duration_s=self.workload.duration_s + extra)
        return replace(scheduled, workload=longer)

    def prediction_for(self, spec: RunSpec) -> Prediction:
        """The prediction for this run's settings."""
        return self.predict(spec) if self.predict is not None else self.prediction


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


def uniform(rng: random.Random, low: float, high: float) -> float:
    """A time in [low, high] seconds, to the millisecond."""
    return round(rng.uniform(low, high), 3)
