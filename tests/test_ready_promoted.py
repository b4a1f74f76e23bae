"""An active-passive cluster left without a primary while a backup is ready (ReadyPromoted):
judged from events made up here, and judged even when the queue could not be drained, since
such a cluster is what keeps the consumers from draining it."""

from __future__ import annotations

from typing import Any

from lab.judge.checker import CheckResult, IdSet
from lab.judge.cluster_expectations import EventSeen, ReadyPromoted
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


# n1 primary, n2 and n3 ready backups; n1 killed at 5 s.
STABLE = [
    _event(1.0, "node.ha", "n1", status="active"),
    _event(1.5, "node.ha", "n2", status="ready"),
    _event(1.6, "node.ha", "n3", status="ready"),
    _event(5.0, "node.kill", "n1"),
]
# ... and the manager asks, round after round, for what it cannot have, until the run ends.
HUNG = [*STABLE, *(_event(6.0 + k, "manager.error", error="422") for k in range(60))]


def _facts(events: list[dict[str, Any]]) -> RunFacts:
    return RunFacts.gather(events, METRICS)


def test_a_ready_backup_promoted_within_the_bound_holds() -> None:
    events = [
        *STABLE,
        _event(5.4, "manager.promote", "n2"),
        _event(5.5, "node.ha", "n2", status="recovering"),
        _event(6.0, "node.start", "n1"),
        _event(6.5, "node.ha", "n1", status="catchup"),
        *(_event(7.0 + k, "manager.vip", "n2") for k in range(60)),
    ]
    assert ReadyPromoted(30.0).unmet(_facts(events)) is None


def test_no_primary_for_the_rest_of_the_run_while_a_backup_is_ready_is_unmet() -> None:
    reason = ReadyPromoted(30.0).unmet(_facts(HUNG))
    assert reason is not None
    assert "from 5.00 s to 65.00 s" in reason and "n2, n3" in reason


def test_time_the_manager_was_kept_away_by_a_fault_is_not_counted() -> None:
    away = [
        _event(4.0, "fault.start", id="f1", fault="pause", target="manager", roles={}),
        _event(40.0, "fault.end", id="f1", fault="pause", target="manager"),
    ]
    events = [*STABLE, *away, *(_event(6.0 + k, "manager.error") for k in range(40))]
    events.append(_event(46.0, "node.ha", "n2", status="recovering"))
    assert ReadyPromoted(10.0).unmet(_facts(events)) is None  # 5–46 s, 35 of them away
    assert ReadyPromoted(5.0).unmet(_facts(events)) is not None


def test_nothing_is_owed_while_no_backup_is_ready() -> None:
    """Every backup still catching up: the documents' hanging cluster, not the manager's."""
    events = [
        _event(1.0, "node.ha", "n1", status="active"),
        _event(1.5, "node.ha", "n2", status="catchup"),
        _event(1.6, "node.ha", "n3", status="catchup"),
        _event(5.0, "node.kill", "n1"),
        *(_event(6.0 + k, "manager.error") for k in range(60)),
    ]
    assert ReadyPromoted(30.0).unmet(_facts(events)) is None


def test_a_frozen_primary_is_no_primary_and_a_frozen_backup_is_not_ready() -> None:
    frozen_primary = [*STABLE[:3], _event(5.0, "node.pause", "n1")]
    frozen_primary += [_event(6.0 + k, "manager.error") for k in range(60)]
    assert ReadyPromoted(30.0).unmet(_facts(frozen_primary)) is not None
    frozen_backups = [
        *STABLE[:3],
        _event(4.0, "node.pause", "n2"),
        _event(4.1, "node.pause", "n3"),
        _event(5.0, "node.kill", "n1"),
        *(_event(6.0 + k, "manager.error") for k in range(60)),
    ]
    assert ReadyPromoted(30.0).unmet(_facts(frozen_backups)) is None


def _undrained(lost: int = 40) -> CheckResult:
    ids = IdSet(lost, tuple(f"p1-{i}" for i in range(lost)))
    none = IdSet(0, ())
    return CheckResult(
        valid="unknown",
        attempted=100,
        acknowledged=100,
        failed=0,
        indeterminate=0,
        received=100 - lost,
        lost=ids,
        unexpected=none,
        resurrected=none,
        recovered=none,
        duplicated=none,
        duplicate_deliveries=0,
    )


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
