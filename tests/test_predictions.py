"""Predictions judge a run from its check, events and figures; each reason names what was seen."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest

from lab.ground.nodes import TargetTraits
from lab.judge.checker import CheckResult, IdSet
from lab.judge.expectations import (
    LogSeen,
    RoleAtEnd,
    ServiceContinued,
    ServiceResumed,
    ServiceStopped,
)
from lab.judge.facts import RunFacts
from lab.judge.metrics import RunMetrics, Window
from lab.judge.prediction import Prediction, violation_kind

NS = 1_000_000_000


def _ids(n: int) -> IdSet:
    return IdSet(n, tuple(f"p1-{i}" for i in range(n)))


def _check(acknowledged: int = 100, lost: int = 0, drained: bool = True) -> CheckResult:
    valid: Any = True if not lost else (False if drained else "unknown")
    return CheckResult(
        valid=valid,
        attempted=acknowledged,
        acknowledged=acknowledged,
        failed=0,
        indeterminate=0,
        received=acknowledged - lost,
        lost=_ids(lost),
        unexpected=_ids(0),
        resurrected=_ids(0),
        recovered=_ids(0),
        duplicated=_ids(0),
        duplicate_deliveries=0,
    )


def _metrics(windows: tuple[Window, ...] = (), two_masters: bool = False) -> RunMetrics:
    return RunMetrics(
        operations=0,
        acknowledged_sends=100,
        received=100,
        workload_s=15.0,
        load_start_s=1.0,
        load_end_s=16.0,
        acknowledged_per_s=10.0,
        unavailability_threshold_s=1.0,
        unavailable_windows=windows,
        unavailable_total_s=sum(w.seconds for w in windows),
        unavailable_longest_s=max((w.seconds for w in windows), default=0.0),
        failover_s=(),
        masters=(),
        two_masters_seen=two_masters,
    )


def _event(time_s: float, kind: str, node: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "time": int(time_s * NS), "kind": kind, "node": node, **fields}


EVENTS = [
    _event(
        5.0, "fault.start", id="f1", fault="kill", target="n1", roles={"n1": "MASTER", "n2": "X"}
    ),
    _event(5.8, "broker.log", "n2", code="MST-1006", text="Recovery Complete"),
    _event(9.0, "fault.end", id="f1", fault="kill", target="n1"),
    _event(9.5, "broker.log", "n1", code="HA-1014", text="Diverged transactions discarded"),
    _event(17.0, "node.status", "n1", role="REPLICA"),
    _event(17.0, "node.status", "n2", role="MASTER"),
]


def _facts(windows: tuple[Window, ...] = ()) -> RunFacts:
    return RunFacts.gather(EVENTS, _metrics(windows))


def test_references_resolve_to_the_nodes_and_moments_of_the_run() -> None:
    facts = _facts()
    assert facts.node("f1") == "n1"
    assert facts.node("master@f1") == "n1"
    assert facts.node("n3") == "n3"
    assert facts.moment("f1:start") == 5.0
    assert facts.moment("f1:end") == 9.0


@pytest.mark.parametrize(
    ("expectation", "met"),
    [
        (LogSeen("MST-1006", after="f1:start"), True),
        (LogSeen("MST-1006", node="f1"), False),
        (LogSeen("HA-1014", node="f1", after="f1:end"), True),
        (LogSeen("REF-1004"), False),
        (RoleAtEnd("f1", "REPLICA"), True),
        (RoleAtEnd("master@f1", "MASTER"), False),
    ],
)
def test_logs_and_roles(expectation: Any, met: bool) -> None:
    assert (expectation.unmet(_facts()) is None) is met


def test_service_stopped_needs_a_gap_covering_the_interval() -> None:
    stopped = ServiceStopped("f1:start", "f1:end", slack_s=0.5)
    assert stopped.unmet(_facts((Window(5.1, 9.2),))) is None
    reason = stopped.unmet(_facts((Window(5.1, 7.0),)))
    assert reason is not None and "5.10–7.00" in reason


def test_service_continued_allows_short_gaps_only() -> None:
    continued = ServiceContinued("f1:start", "f1:end", max_gap_s=2.0)
    assert continued.unmet(_facts((Window(5.0, 6.5), Window(12.0, 15.0)))) is None
    assert continued.unmet(_facts((Window(6.0, 8.5),))) is not None


def test_service_resumed_within_a_time_and_before_the_load_ends() -> None:
    assert ServiceResumed("f1:start", 2.0).unmet(_facts()) is None
    assert ServiceResumed("f1:start", 2.0).unmet(_facts((Window(4.9, 6.5),))) is None
    assert ServiceResumed("f1:start", 1.0).unmet(_facts((Window(4.9, 6.5),))) is not None
    never = ServiceResumed("f1:end", 5.0).unmet(_facts((Window(8.0, 16.0),)))
    assert never is not None and "had not resumed" in never


def test_a_prediction_lists_every_reason() -> None:
    prediction = Prediction(
        text="t",
        two_masters="forbidden",
        expect=(LogSeen("REF-1004"), RoleAtEnd("f1", "MASTER")),
    )
    verdict = prediction.judge(_check(lost=3), EVENTS, _metrics(two_masters=True))
    assert verdict.outcome == "broken"
    assert len(verdict.reasons) == 4
    assert any("3 acknowledged" in r for r in verdict.reasons)
    assert any("two nodes were MASTER" in r for r in verdict.reasons)


def test_predicted_loss_must_be_seen_and_two_masters_when_expected() -> None:
    prediction = Prediction(text="t", loss="detected", two_masters="expected")
    assert prediction.judge(_check(lost=5), EVENTS, _metrics(two_masters=True)).held
    verdict = prediction.judge(_check(lost=0), EVENTS, _metrics())
    assert verdict.outcome == "broken"
    assert len(verdict.reasons) == 2


def test_undrained_loss_is_unknown_either_way() -> None:
    for loss in ("none", "detected"):
        verdict = Prediction(text="t", loss=loss).judge(
            _check(lost=5, drained=False), EVENTS, _metrics()
        )
        assert verdict.outcome == "unknown"


def test_a_reference_to_a_fault_that_never_happened_is_a_reason() -> None:
    prediction = Prediction(text="t", expect=(RoleAtEnd("f9", "REPLICA"),))
    verdict = prediction.judge(_check(), EVENTS, _metrics())
    assert verdict.outcome == "broken"
    assert "f9 was never applied" in verdict.reasons[0]


def test_a_targets_election_allowance_widens_a_bound_that_waits_for_an_election() -> None:
    resumed = ServiceResumed("f1:start", 1.0, terms=("election",))
    slow = (Window(4.9, 8.5),)  # back 3.5 s after f1:start
    assert resumed.unmet(_facts(slow)) is not None
    wider = RunFacts.gather(EVENTS, _metrics(slow), TargetTraits(election_allowance_s=3.0))
    assert resumed.unmet(wider) is None
    narrower = RunFacts.gather(EVENTS, _metrics(slow), TargetTraits(election_allowance_s=1.5))
    reason = resumed.unmet(narrower)
    assert reason is not None and "election allowance 1.5 s" in reason
    # a bound that waits for no election does not get it
    assert ServiceResumed("f1:start", 1.0).unmet(wider) is not None


def test_broker_refs_own_codes_cannot_be_checked_on_another_target() -> None:
    prediction = Prediction(text="t", expect=(LogSeen("REF-1004"),))
    verdict = prediction.judge(_check(), EVENTS, _metrics(), TargetTraits("qpid-broker-j"))
    assert verdict.outcome == "unknown"
    assert "broker_ref's own log code" in verdict.reasons[0]
    # a real reason beside it still breaks the prediction
    broken = Prediction(text="t", expect=(LogSeen("REF-1004"), RoleAtEnd("f1", "MASTER")))
    assert (
        broken.judge(_check(), EVENTS, _metrics(), TargetTraits("qpid-broker-j")).outcome
        == "broken"
    )
    assert prediction.judge(_check(), EVENTS, _metrics()).outcome == "broken"


def test_a_bound_counted_from_a_restart_gets_the_targets_restart_allowance() -> None:
    resumed = ServiceResumed("f1:end", 2.0)  # f1 is a kill: its end starts the node again
    slow = (Window(8.5, 13.0),)  # back 4 s after f1:end
    assert resumed.unmet(_facts(slow)) is not None
    facts = RunFacts.gather(EVENTS, _metrics(slow), TargetTraits(restart_allowance_s=3.0))
    assert resumed.unmet(facts) is None
    # a bound counted from the kill itself gets no restart allowance
    early = RunFacts.gather(
        EVENTS, _metrics((Window(4.5, 9.5),)), TargetTraits(restart_allowance_s=3.0)
    )
    assert ServiceResumed("f1:start", 2.0).unmet(early) is not None


def _with(**changes: Any) -> CheckResult:
    """A clean check with some counts changed (IdSets given as counts)."""
    fields: dict[str, Any] = {
        k: (_ids(v) if k in ("unexpected", "resurrected", "duplicated") else v)
        for k, v in changes.items()
    }
    return replace(_check(), **fields)


# Every branch of the verdict: its outcome and the kind of violation it names.
@pytest.mark.parametrize(
    ("prediction", "check", "two_masters", "outcome", "kinds"),
    [
        (Prediction(text="t"), _check(), False, "held", ()),
        (Prediction(text="t"), _check(acknowledged=0), False, "unknown", ("nothing-acknowledged",)),
        (Prediction(text="t"), _with(unexpected=2), False, "broken", ("unexpected",)),
        (Prediction(text="t"), _with(resurrected=1), False, "broken", ("resurrected",)),
        (Prediction(text="t", refusals_expected=True), _check(), False, "broken", ("no-refusal",)),
        (Prediction(text="t", refusals_expected=True), _with(failed=3), False, "held", ()),
        (Prediction(text="t"), _with(duplicated=2), False, "held", ()),
        (
            Prediction(text="t", duplicates_allowed=False),
            _with(duplicated=2),
            False,
            "broken",
            ("duplicated",),
        ),
        (Prediction(text="t"), _check(lost=3), False, "broken", ("lost",)),
        (Prediction(text="t"), _check(lost=3, drained=False), False, "unknown", ("not-drained",)),
        (Prediction(text="t", loss="allowed"), _check(lost=3), False, "held", ()),
        (Prediction(text="t", loss="detected"), _check(), False, "broken", ("no-loss",)),
        (Prediction(text="t", loss="detected"), _check(lost=2), False, "held", ()),
        (Prediction(text="t", two_masters="forbidden"), _check(), True, "broken", ("two-masters",)),
        (Prediction(text="t", two_masters="either"), _check(), True, "held", ()),
        (
            Prediction(text="t", two_masters="expected"),
            _check(),
            False,
            "broken",
            ("no-two-masters",),
        ),
        (
            Prediction(text="t", expect=(ServiceResumed("f1:start", 1.0),)),
            _check(),
            False,
            "held",
            (),
        ),
        (
            Prediction(text="t", expect=(RoleAtEnd("f1", "MASTER"), LogSeen("HA-9999"))),
            _with(unexpected=1),
            False,
            "broken",
            ("log-missing", "role-at-end", "unexpected"),
        ),
    ],
)
def test_each_branch_of_the_verdict_names_its_violation(
    prediction: Prediction,
    check: CheckResult,
    two_masters: bool,
    outcome: str,
    kinds: tuple[str, ...],
) -> None:
    verdict = prediction.judge(check, EVENTS, _metrics(two_masters=two_masters))
    assert verdict.outcome == outcome
    assert verdict.violations == kinds
    assert len(verdict.reasons) >= len(kinds)


def test_an_expectation_without_a_named_violation_is_named_by_its_class() -> None:
    @dataclass(frozen=True)
    class QueueDepthBelow:
        def unmet(self, facts: RunFacts) -> str | None:
            return "too deep"

    assert violation_kind(QueueDepthBelow()) == "queue-depth-below"
    assert violation_kind(ServiceResumed("f1:start", 1.0)) == "unavailable>bound"
    uncheckable = Prediction(text="t", expect=(LogSeen("REF-1004"),)).judge(
        _check(), EVENTS, _metrics(), TargetTraits("qpid-broker-j")
    )
    assert uncheckable.violations == ("uncheckable",)


@pytest.mark.parametrize(
    ("prediction", "check", "outcome", "kinds"),
    [
        # Loss that the consumers could not drain is unknown only when nothing else broke.
        (
            Prediction(text="t"),
            replace(_check(lost=3, drained=False), unexpected=_ids(1)),
            "broken",
            ("lost", "unexpected"),
        ),
        (
            Prediction(text="t", loss="detected"),
            replace(_check(lost=3, drained=False), unexpected=_ids(1)),
            "broken",
            ("unexpected",),
        ),
        (
            Prediction(text="t", loss="detected"),
            _check(lost=3, drained=False),
            "unknown",
            ("not-drained",),
        ),
        (Prediction(text="t", loss="allowed"), _check(lost=3, drained=False), "held", ()),
        # Nothing acknowledged: nothing else is judged, whatever else the check found.
        (
            Prediction(text="t", two_masters="expected", loss="detected"),
            replace(_check(acknowledged=0), unexpected=_ids(2), resurrected=_ids(1)),
            "unknown",
            ("nothing-acknowledged",),
        ),
        # A refusal seen where none was predicted is no violation; a resurrection always is.
        (Prediction(text="t"), _with(failed=2), "held", ()),
        (
            Prediction(text="t", refusals_expected=True),
            _with(failed=2, resurrected=1),
            "broken",
            ("resurrected",),
        ),
    ],
)
def test_undrained_loss_beside_other_findings_and_what_comes_first(
    prediction: Prediction, check: CheckResult, outcome: str, kinds: tuple[str, ...]
) -> None:
    verdict = prediction.judge(check, EVENTS, _metrics())
    assert (verdict.outcome, verdict.violations) == (outcome, kinds)
    assert len(verdict.reasons) == max(len(kinds), 1 if outcome != "held" else 0)


def test_each_reason_says_how_many_messages() -> None:
    check = replace(
        _check(lost=4), unexpected=_ids(2), resurrected=_ids(3), duplicated=_ids(5), failed=0
    )
    prediction = Prediction(text="t", duplicates_allowed=False, refusals_expected=True)
    verdict = prediction.judge(check, EVENTS, _metrics())
    assert verdict.reasons == (
        "2 message(s) received that were never sent",
        "3 refused message(s) were delivered",
        "no publish was refused, though the documents predict refusals",
        "5 message(s) delivered more than once",
        "4 acknowledged message(s) lost",
    )
    assert verdict.violations == ("duplicated", "lost", "no-refusal", "resurrected", "unexpected")
    undrained = Prediction(text="t").judge(_check(lost=6, drained=False), EVENTS, _metrics())
    assert undrained.reasons[0].startswith("6 acknowledged message(s) not received")
    detected = Prediction(text="t", loss="detected")
    unknown = detected.judge(_check(lost=7, drained=False), EVENTS, _metrics())
    assert "7 acknowledged message(s) not received" in unknown.reasons[0]
    assert "loss is not established" in unknown.reasons[0]


def test_allowed_loss_requires_none_and_names_none() -> None:
    allowed = Prediction(text="t", loss="allowed")
    assert allowed.judge(_check(), EVENTS, _metrics()) == allowed.judge(
        _check(lost=3), EVENTS, _metrics()
    )
    assert allowed.judge(_check(), EVENTS, _metrics()).outcome == "held"


def test_every_reason_is_said_in_full() -> None:
    """The reasons go into result.json and the reports as they are written here."""

    def reasons(prediction: Prediction, check: CheckResult, two: bool = False) -> tuple[str, ...]:
        return prediction.judge(check, EVENTS, _metrics(two_masters=two)).reasons

    t = "t"
    assert reasons(Prediction(t), _check(acknowledged=0)) == (
        "no message was acknowledged: the prediction was not tested",
    )
    assert reasons(Prediction(t), _check(lost=2, drained=False)) == (
        "2 acknowledged message(s) not received, but the consumers could not drain the queue",
    )
    assert reasons(Prediction(t, loss="detected"), _check(lost=2, drained=False)) == (
        "2 acknowledged message(s) not received, but the consumers could not drain the queue, "
        "so the loss is not established",
    )
    assert reasons(Prediction(t, loss="detected"), _check()) == (
        "the documents predict acknowledged loss here, and none was seen",
    )
    assert reasons(Prediction(t, two_masters="forbidden"), _check(), True) == (
        "two nodes were MASTER at the same time",
    )
    assert reasons(Prediction(t, two_masters="expected"), _check()) == (
        "the documents predict two masters at once here, and none were seen",
    )
