"""What the documents predict for a run, and the verdict: does the run show it?

    Prediction.judge(check, events, metrics, target) → Verdict(outcome, reasons)

Outcomes: `held` (every part of the prediction shown), `broken` (some part not, each
reason named), `unknown` (the prediction could not be tested: nothing acknowledged,
the queue not drained, or only expectations the target's logs cannot show).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from lab.ground.nodes import BROKER_REF_TRAITS, TargetTraits
from lab.judge.checker import CheckResult
from lab.judge.expectations import UNCHECKABLE, Expectation
from lab.judge.facts import RunFacts, UnknownReference
from lab.judge.metrics import RunMetrics

__all__ = ["Outcome", "Prediction", "Verdict"]

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

    `loss` is "none" (no acknowledged message may be lost), "detected" (the
    documents predict loss; the lab must see it) or "allowed" (the documents warn that
    data may be lost here: any loss is reported, none is required).
    `duplicates_allowed` says whether
    a message may be delivered twice. `two_masters` is "forbidden" (never two nodes
    MASTER at once), "expected" (the documents predict a split brain) or "either".
    `expect` lists the rest (lab.judge.expectations): log codes, roles at the end,
    service stopped / continued / resumed around the faults.
    """

    text: str
    loss: Literal["none", "detected", "allowed"] = "none"
    duplicates_allowed: bool = True
    two_masters: Literal["forbidden", "expected", "either"] = "either"
    expect: tuple[Expectation, ...] = ()
    refusals_expected: bool = False  # the broker must refuse some publishes (a full disk)

    def judge(
        self,
        check: CheckResult,
        events: Iterable[Mapping[str, Any]],
        metrics: RunMetrics,
        target: TargetTraits = BROKER_REF_TRAITS,
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
        elif self.loss == "allowed":
            pass  # reported in the check result, neither a violation nor required
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
        facts = RunFacts.gather(events, metrics, target, check)
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
