"""What the documents predict for a run, and the verdict: does the run show it?

    Prediction.judge(check, events, metrics, target, history, timings) → Verdict

Outcomes: `held` (every part of the prediction shown), `broken` (some part not, each
reason named), `unknown` (the prediction could not be tested: nothing acknowledged,
the queue not drained, or only expectations the target's logs cannot show).

A fault the schedule planned and the nemesis skipped (its `@master` found no master at its
moment: faults.selectors) leaves the prediction untested: its reason says why, and the
verdict is `unknown` unless another part of the prediction was broken.

Each reason has a violation kind (`lost`, `two-masters`, `unavailable>bound` …), the
words campaigns, the failure database and replays compare runs by: two runs show the
same violation when they share a kind, whatever the counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa

from lab.ground.nodes import BROKER_REF_TRAITS, TargetTraits
from lab.ground.spec import GroupSettings
from lab.judge.bounds import Timings, broker_ref_timings, master_lease
from lab.judge.checker import CheckResult
from lab.judge.expectations import UNCHECKABLE, Expectation
from lab.judge.facts import RunFacts, SkippedFault, UnknownReference
from lab.judge.metrics import RunMetrics

__all__ = ["Outcome", "Prediction", "Verdict", "violation_kind"]

Outcome = Literal["held", "broken", "unknown"]

# The kinds of an unknown verdict: why the prediction could not be tested.
NOTHING_ACKNOWLEDGED = "nothing-acknowledged"
NOT_DRAINED = "not-drained"
UNCHECKABLE_KIND = "uncheckable"
NOT_APPLIED = "fault-not-applied"


@dataclass(frozen=True)
class Verdict:
    """The judge's answer: did the run show the prediction?

    Attributes:
        outcome: `held` (every part shown), `broken` (some part not), or `unknown` (the
            prediction could not be tested: nothing acknowledged, the queue not drained,
            a fault not applied, only expectations the target's logs cannot show).
        reasons: one sentence for each part not shown, naming what was seen.
        violations: the kind of each reason (`lost`, `two-masters`, `unavailable>bound`
            …: docs/run-folder.md), sorted and without repeats.
    """

    outcome: Outcome
    reasons: tuple[str, ...]
    violations: tuple[str, ...] = ()

    @property
    def held(self) -> bool:
        """Whether the outcome is `held`."""
        return self.outcome == "held"

    @staticmethod
    def of(outcome: Outcome, found: Iterable[tuple[str, str]]) -> Verdict:
        """A verdict from (kind, reason) pairs."""
        pairs = list(found)
        return Verdict(outcome, tuple(r for _, r in pairs), tuple(sorted({k for k, _ in pairs})))


def violation_kind(expectation: Expectation) -> str:
    """An expectation's `violation` (e.g. `unavailable>bound`), else its class name in
    lower case with dashes (`StatusReached` → `status-reached`)."""
    named = getattr(type(expectation), "violation", None)
    if isinstance(named, str):
        return named
    name = type(expectation).__name__
    return "".join(f"-{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))


@dataclass(frozen=True)
class Prediction:
    """What the documents predict for a run: the verdict is `held` when the run shows all
    of it.

    Parameters:
        text: the prediction in words (result.json's `prediction`, the reports).
        loss: "none" (no acknowledged message may be lost), "detected" (the documents
            predict loss; the lab must see it) or "allowed" (the documents warn that data
            may be lost here: any loss is reported, none is required).
        duplicates_allowed: whether a message may be delivered twice (a client re-sends
            what it does not know was acknowledged, so a failover allows duplicates).
        two_masters: "forbidden" (never two nodes MASTER at once), "beyond-lease" (never
            two for longer than a master keeps its role without a quorum:
            bounds.master_lease, the run's silence and election timeouts and a little
            work), "expected" (the documents predict a split brain) or "either".
        expect: the rest, each an `Expectation`: the lab's (`LogSeen`, `RoleAtEnd`,
            `RoleNever`, `ServiceStopped`, `ServiceContinued`, `ServiceResumed`) or a
            value of your own with `unmet(facts)`.
        refusals_expected: the broker must refuse some publishes (a full disk).
    """

    text: str
    loss: Literal["none", "detected", "allowed"] = "none"
    duplicates_allowed: bool = True
    two_masters: Literal["forbidden", "beyond-lease", "expected", "either"] = "either"
    expect: tuple[Expectation, ...] = ()
    refusals_expected: bool = False  # the broker must refuse some publishes (a full disk)

    def judge(
        self,
        check: CheckResult,
        events: Iterable[Mapping[str, Any]],
        metrics: RunMetrics,
        target: TargetTraits = BROKER_REF_TRAITS,
        history: pa.Table | None = None,
        timings: Timings | None = None,
    ) -> Verdict:
        """The verdict with every reason it is not `held`. A bound on the service's return
        adds the run's configured timeouts it names (`timings`, lab.judge.bounds; without
        them, broker_ref's with the target's allowances), and the target's restart
        allowance when it is counted from a node's restart. When the only reasons are
        expectations the target's logs cannot show, the verdict is `unknown`. `history`
        (the client operations, lab.judge.metrics.read_operations) is for expectations
        that read it."""
        found: list[tuple[str, str]] = []
        if check.acknowledged == 0:
            return Verdict.of(
                "unknown",
                [
                    (
                        NOTHING_ACKNOWLEDGED,
                        "no message was acknowledged: the prediction was not tested",
                    )
                ],
            )
        if check.unexpected.count:
            found.append(
                ("unexpected", f"{check.unexpected.count} message(s) received that were never sent")
            )
        if check.resurrected.count:
            found.append(
                ("resurrected", f"{check.resurrected.count} refused message(s) were delivered")
            )
        if self.refusals_expected and check.failed == 0:
            found.append(
                ("no-refusal", "no publish was refused, though the documents predict refusals")
            )
        if not self.duplicates_allowed and check.duplicated.count:
            found.append(
                ("duplicated", f"{check.duplicated.count} message(s) delivered more than once")
            )
        if self.loss == "none":
            if check.lost.count and check.valid == "unknown" and not found:
                facts = RunFacts.gather(events, metrics, target, check, history, timings)
                undrained = self._unmet_without_drain(facts)
                if undrained:
                    return Verdict.of("broken", undrained)
                return Verdict.of(
                    "unknown",
                    [
                        (
                            NOT_DRAINED,
                            f"{check.lost.count} acknowledged message(s) not received, "
                            "but the consumers could not drain the queue",
                        )
                    ],
                )
            if check.lost.count:
                found.append(("lost", f"{check.lost.count} acknowledged message(s) lost"))
        elif self.loss == "allowed":
            pass  # reported in the check result, neither a violation nor required
        elif check.lost.count == 0:
            found.append(
                ("no-loss", "the documents predict acknowledged loss here, and none was seen")
            )
        elif check.valid == "unknown" and not found:
            return Verdict.of(
                "unknown",
                [
                    (
                        NOT_DRAINED,
                        f"{check.lost.count} acknowledged message(s) not received, but the "
                        "consumers could not drain the queue, so the loss is not established",
                    )
                ],
            )
        if self.two_masters == "forbidden" and metrics.two_masters_seen:
            found.append(("two-masters", "two nodes were MASTER at the same time"))
        elif self.two_masters == "beyond-lease":
            known = timings or Timings(broker_ref_timings(GroupSettings(), 3))
            lease = master_lease(known)
            if metrics.two_masters_longest_s > lease.seconds:
                found.append(
                    (
                        "two-masters",
                        f"two nodes were MASTER at the same time for "
                        f"{metrics.two_masters_longest_s:.3g} s, longer than a master keeps "
                        f"its role without a quorum ({lease.seconds:g} s: {lease.describe()})",
                    )
                )
        elif self.two_masters == "expected" and not metrics.two_masters_seen:
            found.append(
                (
                    "no-two-masters",
                    "the documents predict two masters at once here, and none were seen",
                )
            )
        facts = RunFacts.gather(events, metrics, target, check, history, timings)
        for fault_id, why in facts.skipped.items():
            found.append((NOT_APPLIED, f"{UNCHECKABLE} {why}, so {fault_id} was not applied"))
        for expectation in self.expect:
            try:
                reason = expectation.unmet(facts)
            except SkippedFault:
                continue  # said once, above
            except UnknownReference as exc:
                reason = f"{expectation}: {exc}"
            if reason is not None:
                found.append((violation_kind(expectation), reason))
        if found and all(r.startswith(UNCHECKABLE) for _, r in found):
            return Verdict.of("unknown", [(UNCHECKABLE_KIND, r) for _, r in found])
        return Verdict.of("broken", found) if found else Verdict("held", ())

    def _unmet_without_drain(self, facts: RunFacts) -> list[tuple[str, str]]:
        """The reasons of the expectations that judge a run whose queue could not be drained
        (`holds_without_drain`: they read the cluster's events, not the messages), when
        every fault they name was applied."""
        found: list[tuple[str, str]] = []
        for expectation in self.expect:
            if not getattr(expectation, "holds_without_drain", False):
                continue
            try:
                reason = expectation.unmet(facts)
            except UnknownReference:
                continue
            if reason is not None:
                found.append((violation_kind(expectation), reason))
        return found
