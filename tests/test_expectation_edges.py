"""The expectations at their edges: a log line just before or after the moment asked about,
a gap that just covers or just misses an interval, a bound met to the millisecond."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from test_predictions import EVENTS, _check, _event, _facts, _metrics

from lab.ground.nodes import TargetTraits
from lab.judge.expectations import (
    LogSeen,
    RoleAtEnd,
    RoleNever,
    ServiceContinued,
    ServiceResumed,
    ServiceStopped,
)
from lab.judge.facts import RunFacts
from lab.judge.metrics import Window
from lab.judge.prediction import Prediction


def test_expectations_see_the_check_of_the_run() -> None:
    @dataclass(frozen=True)
    class NothingLost:
        def unmet(self, facts: RunFacts) -> str | None:
            assert facts.check is not None, "the judge gave the expectation no check"
            return None if facts.check.lost.count == 0 else f"{facts.check.lost.count} lost"

    prediction = Prediction(text="t", loss="allowed", expect=(NothingLost(),))
    assert prediction.judge(_check(), EVENTS, _metrics()).held
    assert prediction.judge(_check(lost=2), EVENTS, _metrics()).reasons == ("2 lost",)


def _with_logs(*logs: dict[str, Any]) -> RunFacts:
    return RunFacts.gather([*EVENTS, *logs], _metrics())


def test_a_log_seen_before_the_moment_it_is_asked_after_does_not_count() -> None:
    facts = _facts()  # MST-1006 on n2 at 5.8 s; f1 ran 5.0–9.0 s
    assert LogSeen("MST-1006", after="f1:start").unmet(facts) is None
    assert LogSeen("MST-1006", after="f1:end").unmet(facts) == (
        "no MST-1006 after f1:end in the operational logs (it was written by n2)"
    )
    at_the_moment = _with_logs(_event(9.0, "broker.log", "n3", code="HA-2000", text="x"))
    assert LogSeen("HA-2000", after="f1:end").unmet(at_the_moment) is None


def test_a_log_is_looked_for_past_lines_of_other_nodes_and_times() -> None:
    facts = _with_logs(
        _event(1.0, "broker.log", "n2", code="HA-2000", text="early, elsewhere"),
        _event(2.0, "broker.log", "n1", code="HA-2000", text="early"),
        _event(10.0, "broker.log", "n1", code="HA-2000", text="late"),
    )
    assert LogSeen("HA-2000", node="n1").unmet(facts) is None
    assert LogSeen("HA-2000", node="n1", after="f1:end").unmet(facts) is None
    assert LogSeen("HA-2000", node="n3").unmet(facts) == (
        "no HA-2000 on n3 in the operational logs (it was written by n1, n2)"
    )
    assert LogSeen("HA-9999").unmet(facts) == "no HA-9999 in the operational logs"
    assert LogSeen("MST-1006", node="f1", after="f1:start").unmet(facts) == (
        "no MST-1006 on n1 after f1:start in the operational logs (it was written by n2)"
    )


def test_reasons_of_roles_and_uncheckable_codes_in_full() -> None:
    facts = _facts()
    assert RoleAtEnd("n3", "MASTER").unmet(facts) == "n3 (n3) ended as no answer, expected MASTER"
    assert RoleAtEnd("f1", "MASTER").unmet(facts) == "n1 (f1) ended as REPLICA, expected MASTER"
    other = RunFacts.gather(EVENTS, _metrics(), TargetTraits("qpid-broker-j"))
    assert LogSeen("REF-1004").unmet(other) == (
        "cannot be checked: REF-1004 is broker_ref's own log code; qpid-broker-j writes none "
        "for this event, so its logs cannot show it"
    )


def test_service_stopped_at_its_edges() -> None:
    # from f1:start + 0.5 s (5.5) to f1:end - 0.25 s (8.75)
    stopped = ServiceStopped("f1:start", "f1:end")
    assert stopped.unmet(_facts((Window(5.5, 8.75),))) is None
    assert stopped.unmet(_facts((Window(5.6, 8.75),))) is not None
    assert stopped.unmet(_facts((Window(5.5, 8.7),))) is not None
    assert stopped.unmet(_facts()) == (
        "service did not stop from f1:start (+0.5 s) to f1:end (-0.25 s) (5.50–8.75 s): "
        "messages were acknowledged; gaps: no gap over the threshold"
    )
    two = stopped.unmet(_facts((Window(2.0, 3.0), Window(6.0, 7.0))))
    assert two is not None and two.endswith("gaps: 2.00–3.00 s, 6.00–7.00 s")
    empty = ServiceStopped("f1:start", "f1:end", slack_s=0.5, end_slack_s=3.5)  # 5.5 to 5.5
    assert empty.unmet(_facts()) is None


def test_service_continued_at_its_edges() -> None:
    continued = ServiceContinued("f1:start", "f1:end", max_gap_s=2.0)  # 5.0 to 9.0
    assert continued.unmet(_facts((Window(9.0, 12.0),))) is None  # begins as f1 ends
    assert continued.unmet(_facts((Window(2.0, 5.0),))) is None  # ends as f1 begins
    assert continued.unmet(_facts((Window(6.0, 8.0),))) is None  # exactly the bound
    assert continued.unmet(_facts((Window(6.0, 8.5),))) == (
        "service was interrupted between f1:start and f1:end (gaps over 2 s: 6.00–8.50 s)"
    )


def test_service_resumed_at_its_edges() -> None:
    assert ServiceResumed("f1:start", 1.0).unmet(_facts((Window(5.0, 9.0),))) == (
        "service resumed 4.00 s after f1:start, expected within 1 s"
    )  # a gap that begins at the very moment
    assert ServiceResumed("f1:start", 2.0).unmet(_facts((Window(4.9, 7.0),))) is None  # exactly
    # back half a second before the load ended: resumed, within a generous bound
    assert ServiceResumed("f1:start", 20.0).unmet(_facts((Window(4.9, 15.5),))) is None
    assert ServiceResumed("f1:end", 5.0).unmet(_facts((Window(8.0, 16.0),))) == (
        "service had not resumed 7.00 s after f1:end, expected within 5 s"
    )
    both = RunFacts.gather(
        EVENTS,
        _metrics((Window(8.5, 15.0),)),
        TargetTraits("slow", election_allowance_s=1.0, restart_allowance_s=2.0),
    )
    assert ServiceResumed("f1:end", 1.0).unmet(both) == (  # no election named: no allowance
        "service resumed 6.00 s after f1:end, expected within 3 s (1 s + restart allowance "
        "2 s (slow's, measured))"
    )
    assert ServiceResumed("f1:end", 1.0, terms=("election",)).unmet(both) == (
        "service resumed 6.00 s after f1:end, expected within 4.6 s (1 s + election 0.6 s (the "
        "election timeout, and half of it for each of 0 lower ranks) + election allowance 1 s "
        "(slow's, measured) + restart allowance 2 s (slow's, measured))"
    )


def test_a_bound_from_a_restart_counts_the_restart_the_node_took_when_it_said_so() -> None:
    """f1 killed n1 and restarted it at 9.0 s: a broker that logs it is ready (BRK-1004)
    2.5 s later gets those 2.5 s, not its target's restart allowance; another node's line,
    or one from before the restart, does not count."""
    slow = TargetTraits("slow", restart_allowance_s=30.0)
    gap = (Window(8.5, 15.0),)  # back 6 s after the restart
    ready = _event(11.5, "broker.log", "n1", code="BRK-1004", text="Qpid Broker Ready")
    facts = RunFacts.gather([*EVENTS, ready], _metrics(gap), slow)
    assert ServiceResumed("f1:end", 3.0).unmet(facts) == (
        "service resumed 6.00 s after f1:end, expected within 5.5 s (3 s + restart 2.5 s "
        "(until n1's BRK-1004))"
    )
    assert ServiceResumed("f1:end", 3.5).unmet(facts) is None
    elsewhere = [
        _event(11.5, "broker.log", "n2", code="BRK-1004", text="Qpid Broker Ready"),
        _event(8.0, "broker.log", "n1", code="BRK-1004", text="Qpid Broker Ready"),
    ]
    allowed = RunFacts.gather([*EVENTS, *elsewhere], _metrics(gap), slow)
    assert ServiceResumed("f1:end", 3.0).unmet(allowed) is None  # 3 s + 30 s allowance


def test_a_load_that_ends_before_the_bound_cannot_show_the_service_missed_it() -> None:
    """The load ends at 16.0 s, 7 s after f1:end: with a bound of 10 s the run cannot say
    whether the service would have been back in time (the verdict is then unknown)."""
    never = _facts((Window(8.0, 16.0),))
    reason = ServiceResumed("f1:end", 10.0).unmet(never)
    assert reason == (
        "cannot be checked: the load ended 7.00 s after f1:end, before the service was due "
        "back (expected within 10 s)"
    )
    verdict = Prediction(text="t", expect=(ServiceResumed("f1:end", 10.0),)).judge(
        _check(), EVENTS, _metrics((Window(8.0, 16.0),))
    )
    assert verdict.outcome == "unknown"
    assert ServiceResumed("f1:end", 6.0).unmet(never) == (
        "service had not resumed 7.00 s after f1:end, expected within 6 s"
    )


def test_what_a_node_did_once_the_teardown_began_is_not_the_runs() -> None:
    # The lab stops the primary first; a backup in sync takes over before its own stop.
    took_over = _event(73.4, "node.role", "n1", previous="REPLICA", role="MASTER")
    teardown = _event(73.0, "workload.phase", phase="teardown")
    during = RunFacts.gather([*EVENTS, took_over], _metrics())
    after = RunFacts.gather([*EVENTS, teardown, took_over], _metrics())
    never = RoleNever("n1", ("MASTER",), after="f1:start")  # n1 ended as REPLICA
    assert never.unmet(during) == "n1 (n1) became MASTER 68.40 s after f1:start"
    assert never.unmet(after) is None
