"""What an active-passive run is judged by, from events and figures made up here: the
brokers' statuses, the manager's decisions, where a loss fell, the counters they read, and
a cluster left without a primary while a backup is ready (ReadyPromoted) — judged even when
the queue could not be drained, since such a cluster is what keeps the consumers from
draining it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from lab.judge.checker import CheckResult, IdSet
from lab.judge.cluster_expectations import (
    ClientsNoticed,
    EventNever,
    EventSeen,
    LostOnlyFrom,
    MetricAtLeast,
    ReadyPromoted,
    StatusNever,
    StatusReached,
)
from lab.judge.cluster_metrics import clients_noticed, consumed_before_replicated
from lab.judge.facts import RunFacts
from lab.judge.metrics import RunMetrics
from lab.judge.prediction import Prediction

NS = 1_000_000_000

METRICS = RunMetrics(
    operations=0,
    acknowledged_sends=100,
    received=100,
    workload_s=15.0,
    load_start_s=1.0,
    load_end_s=16.0,
    acknowledged_per_s=10.0,
    unavailability_threshold_s=1.0,
    unavailable_windows=(),
    unavailable_total_s=0.0,
    unavailable_longest_s=0.0,
    failover_s=(),
    masters=(),
    two_masters_seen=False,
)


def _event(time_s: float, kind: str, node: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "time": int(time_s * NS), "kind": kind, "node": node, **fields}


def _kill(at: float, until: float, fault_id: str, target: str, fault: str = "kill") -> list[Any]:
    return [
        _event(at, "fault.start", id=fault_id, fault=fault, target=target, roles={}),
        _event(until, "fault.end", id=fault_id, fault=fault, target=target),
    ]


# C1 as the events tell it: n1 primary, killed at 5 s; the manager promotes n2.
EVENTS = [
    _event(1.0, "node.ha", "n1", status="active"),
    _event(1.2, "node.ha", "n2", status="catchup"),
    _event(1.5, "node.ha", "n2", status="ready"),
    _event(1.6, "node.ha", "n3", status="ready"),
    *_kill(5.0, 8.0, "f1", "n1"),
    _event(5.4, "manager.promote", "n2"),
    _event(5.5, "node.ha", "n2", status="recovering"),
    _event(6.1, "node.ha", "n2", status="active"),
    _event(5.6, "manager.restart", "n1"),
    _event(6.5, "node.ha", "n1", status="catchup"),
    _event(7.0, "node.ha", "n1", status="ready"),
]


def _facts(check: CheckResult | None = None, **metrics: Any) -> RunFacts:
    return RunFacts.gather(EVENTS, replace(METRICS, **metrics), check=check)


def _facts_of(events: list[dict[str, Any]]) -> RunFacts:
    return RunFacts.gather(events, METRICS)


@pytest.mark.parametrize(
    ("expectation", "met"),
    [
        (StatusReached("n2", "active", after="f1:start", within_s=2.0), True),
        (StatusReached("n2", "active", after="f1:start", within_s=0.5), False),
        (StatusReached("f1", "ready", after="f1:start"), True),  # f1: the node it hit
        (StatusReached(None, "recovering"), True),
        (StatusReached(None, "ready", after="f1:start"), True),  # n1, back
        (StatusReached(None, "ready", after="f1:start", nodes=2), False),  # n1 alone
        (StatusReached(None, "ready", nodes=2), True),  # n2 and n3 before the kill
        (StatusReached("n3", "active"), False),
        (StatusNever("n3", "recovering"), True),
        (StatusNever("n1", "catchup", after="f1:start", before="f1:end"), False),
        (StatusNever("n1", "catchup", before="f1:start"), True),
        (EventSeen("manager.promote", "n2", after="f1:start", within_s=1.0), True),
        (EventSeen("manager.promote", "n3"), False),
        (EventSeen("manager.no-candidate"), False),
        (EventNever("manager.no-candidate"), True),
        (EventNever("manager.restart", "f1"), False),
    ],
)
def test_statuses_and_the_managers_decisions(expectation: Any, met: bool) -> None:
    assert (expectation.unmet(_facts()) is None) is met


def test_too_few_nodes_reaching_a_status_are_named() -> None:
    reason = StatusReached(None, "ready", after="f1:start", nodes=2).unmet(_facts())
    assert reason == "fewer than 2 nodes became ready after f1:start (n1 did)"


def test_a_status_never_reached_says_where_the_node_went() -> None:
    reason = StatusReached("n1", "active", after="f1:start").unmet(_facts())
    assert reason == "n1 (n1) never became active after f1:start (it went active → catchup → ready)"


def _check(lost: tuple[str, ...]) -> CheckResult:
    none = IdSet(0, ())
    return CheckResult(
        valid=not lost,
        attempted=10,
        acknowledged=10,
        failed=0,
        indeterminate=0,
        received=10 - len(lost),
        lost=IdSet(len(lost), lost),
        unexpected=none,
        resurrected=none,
        recovered=none,
        duplicated=none,
        duplicate_deliveries=0,
    )


def test_a_loss_is_allowed_only_from_the_named_producers() -> None:
    assert LostOnlyFrom(("p3",)).unmet(_facts(_check(("p3-1", "p3-2")))) is None
    reason = LostOnlyFrom(("p3",)).unmet(_facts(_check(("p3-1", "p1-7"))))
    assert reason == "1 lost message(s) not from p3: p1-7"
    assert LostOnlyFrom(("p3",)).unmet(_facts()) == "the checker's result is not known here"


def test_a_metric_must_reach_its_value() -> None:
    assert (
        MetricAtLeast("consumed_before_replicated", 1).unmet(_facts(consumed_before_replicated=12))
        is None
    )
    reason = MetricAtLeast("consumed_before_replicated", 1).unmet(_facts())
    assert reason == "consumed_before_replicated was None, expected at least 1"


def test_clients_noticed_within_a_bound() -> None:
    assert ClientsNoticed("f1", 2.0).unmet(_facts(clients_noticed_s=(1.5,))) is None
    late = ClientsNoticed("f1", 2.0).unmet(_facts(clients_noticed_s=(2.5,)))
    assert late == "clients noticed n1 (f1) after 2.50 s, expected within 2 s"
    never = ClientsNoticed("f1", 2.0).unmet(_facts(clients_noticed_s=(None,)))
    assert never is not None and "never" in never


def test_consumed_before_replicated_sums_each_run_of_each_broker() -> None:
    def count(at: float, node: str, n: int) -> dict[str, Any]:
        text = f"Consumed before replication : {n} messages"
        return _event(at, "broker.log", node, code="REF-2011", text=text)

    events = [
        count(1.0, "n1", 3),
        count(2.0, "n1", 7),  # a running count: 7 so far
        _event(3.0, "node.start", "n1"),  # restarted: its count starts again
        count(4.0, "n1", 2),
        count(4.5, "n2", 5),
    ]
    assert consumed_before_replicated(events) == 7 + 2 + 5
    assert consumed_before_replicated([_event(1.0, "node.start", "n1")]) is None


def test_clients_noticed_counts_only_what_the_fault_took_out_while_it_lasted() -> None:
    events = [
        *_kill(2.0, 4.0, "f1", "n2", fault="pause"),
        *_kill(6.0, 9.0, "f2", "n1"),
        *_kill(10.0, 12.0, "f3", "n1", fault="latency"),
    ]
    infos = [
        (6.2, "n1"),  # f2's kill, seen at once
        (7.0, "n2"),  # not f1's: it ended at 4 s
        (10.5, "n1"),
    ]
    assert clients_noticed(events, infos) == (None, 0.2, None)


# n1 primary, n2 and n3 ready backups; n1 killed at 5 s.
STABLE = [
    _event(1.0, "node.ha", "n1", status="active"),
    _event(1.5, "node.ha", "n2", status="ready"),
    _event(1.6, "node.ha", "n3", status="ready"),
    _event(5.0, "node.kill", "n1"),
]
# ... and the manager asks, round after round, for what it cannot have, until the run ends.
HUNG = [*STABLE, *(_event(6.0 + k, "manager.error", error="422") for k in range(60))]


def test_a_ready_backup_promoted_within_the_bound_holds() -> None:
    events = [
        *STABLE,
        _event(5.4, "manager.promote", "n2"),
        _event(5.5, "node.ha", "n2", status="recovering"),
        _event(6.0, "node.start", "n1"),
        _event(6.5, "node.ha", "n1", status="catchup"),
        *(_event(7.0 + k, "manager.vip", "n2") for k in range(60)),
    ]
    assert ReadyPromoted(30.0).unmet(_facts_of(events)) is None


def test_no_primary_for_the_rest_of_the_run_while_a_backup_is_ready_is_unmet() -> None:
    reason = ReadyPromoted(30.0).unmet(_facts_of(HUNG))
    assert reason is not None
    assert "from 5.00 s to 65.00 s" in reason and "n2, n3" in reason


def test_time_the_manager_was_kept_away_by_a_fault_is_not_counted() -> None:
    away = [
        _event(4.0, "fault.start", id="f1", fault="pause", target="manager", roles={}),
        _event(40.0, "fault.end", id="f1", fault="pause", target="manager"),
    ]
    events = [*STABLE, *away, *(_event(6.0 + k, "manager.error") for k in range(40))]
    events.append(_event(46.0, "node.ha", "n2", status="recovering"))
    assert ReadyPromoted(10.0).unmet(_facts_of(events)) is None  # 5–46 s, 35 of them away
    assert ReadyPromoted(5.0).unmet(_facts_of(events)) is not None


def test_nothing_is_owed_while_no_backup_is_ready() -> None:
    """Every backup still catching up: the documents' hanging cluster, not the manager's."""
    events = [
        _event(1.0, "node.ha", "n1", status="active"),
        _event(1.5, "node.ha", "n2", status="catchup"),
        _event(1.6, "node.ha", "n3", status="catchup"),
        _event(5.0, "node.kill", "n1"),
        *(_event(6.0 + k, "manager.error") for k in range(60)),
    ]
    assert ReadyPromoted(30.0).unmet(_facts_of(events)) is None
    assert ReadyPromoted(30.0).unmet(_facts_of([])) is None  # a run with no events owes none


def test_a_frozen_primary_is_no_primary_and_a_frozen_backup_is_not_ready() -> None:
    frozen_primary = [*STABLE[:3], _event(5.0, "node.pause", "n1")]
    frozen_primary += [_event(6.0 + k, "manager.error") for k in range(60)]
    assert ReadyPromoted(30.0).unmet(_facts_of(frozen_primary)) is not None
    frozen_backups = [
        *STABLE[:3],
        _event(4.0, "node.pause", "n2"),
        _event(4.1, "node.pause", "n3"),
        _event(5.0, "node.kill", "n1"),
        *(_event(6.0 + k, "manager.error") for k in range(60)),
    ]
    assert ReadyPromoted(30.0).unmet(_facts_of(frozen_backups)) is None


def _undrained() -> CheckResult:
    """Four acknowledged messages not received, the queue not drained."""
    return replace(_check(("p1-1", "p1-2", "p1-3", "p1-4")), valid="unknown")


def test_an_undrained_run_of_a_hung_cluster_is_broken_not_unknown() -> None:
    prediction = Prediction(text="t", expect=(ReadyPromoted(30.0),))
    verdict = prediction.judge(_undrained(), HUNG, METRICS)
    assert verdict.outcome == "broken"
    assert verdict.violations == ("no-promotion",)


def test_an_undrained_run_stays_unknown_when_only_message_reading_expectations_are_unmet() -> None:
    """Only expectations that read the cluster's events judge an undrained run: the rest
    (here an event never seen) wait for a drained queue, as before."""
    held = Prediction(text="t", expect=(ReadyPromoted(30.0),))
    promoted = [*STABLE, _event(5.5, "node.ha", "n2", status="recovering")]
    assert held.judge(_undrained(), promoted, METRICS).outcome == "unknown"
    other = Prediction(text="t", expect=(EventSeen("manager.no-candidate"),))
    assert other.judge(_undrained(), HUNG, METRICS).outcome == "unknown"
