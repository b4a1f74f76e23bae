"""Node operations (Broker-J's HA chapter, "Node Operations"): the graceful stop fault,
the rolling restart's schedule and how a slower target paces it, and the judge's
StoppedCleanly. The runs themselves are in scenarios/test_scenarios.py (both backends)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from test_predictions import _facts as _windowed

from faults.catalog import FAULTS
from faults.nemesis import Nemesis
from lab.ground.errors import ClusterError
from lab.ground.faultops import FaultOp
from lab.ground.nodes import BROKER_REF_TRAITS, TargetTraits
from lab.judge.expectations import ServiceResumed, StoppedCleanly
from lab.judge.facts import RunFacts
from lab.judge.metrics import Window
from scenarios.base import spaced_out
from scenarios.catalog import SCENARIOS

ROLLING = SCENARIOS["rolling-restart"]
JVM = TargetTraits(name="qpid-broker-j", restart_allowance_s=15.0)
NS = 1_000_000_000


class _Operated:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def stop_node(self, name: str) -> None:
        self.calls.append(f"stop {name}")

    def restart(self, name: str) -> None:
        self.calls.append(f"start {name}")


def test_a_graceful_stop_stops_the_node_and_its_heal_starts_it() -> None:
    cluster = _Operated()
    with Nemesis(cluster) as nemesis:
        nemesis.apply(FaultOp(1.0, "start", "graceful_stop", "n2", "f1"))
        assert cluster.calls == ["stop n2"]
    assert cluster.calls == ["stop n2", "start n2"]  # healed on leaving the block


def test_a_cluster_that_cannot_stop_its_nodes_says_so() -> None:
    with pytest.raises(ClusterError, match="needs a cluster whose nodes can be stopped"):
        FAULTS["graceful_stop"].apply(object(), FaultOp(1.0, "start", "graceful_stop", "n1", "f1"))


def test_the_rolling_restart_stops_every_node_once_one_after_another() -> None:
    spec = ROLLING.spec(7)
    starts = [op for op in spec.schedule if op.action == "start"]
    assert [op.target for op in starts] == ["n3", "n2", "n1"]  # the first master last
    assert {op.fault for op in spec.schedule} == {"graceful_stop"}
    windows = sorted(
        (s.at_s, next(o.at_s for o in spec.schedule if o.id == s.id and o.action == "stop"))
        for s in starts
    )
    for (_, end), (start, _) in pairwise(windows):
        assert start - end >= 3.0  # time to rejoin before the next stop
    assert windows[-1][1] < spec.workload.duration_s


def test_a_slower_target_gets_its_allowance_between_steps() -> None:
    quick, slow = ROLLING.spec(7), ROLLING.spec(7, target=JVM)
    gaps = [round(b.at_s - a.at_s, 3) for a, b in zip(quick.schedule, slow.schedule, strict=True)]
    assert gaps == [0.0, 0.0, 15.0, 15.0, 30.0, 30.0]
    assert slow.workload.duration_s == quick.workload.duration_s + 3 * 15.0
    # A scenario that is not paced keeps its moments and gets the allowance once, at the end.
    master = SCENARIOS["master-failure"]
    assert master.spec(7, target=JVM).schedule == master.spec(7).schedule
    assert master.spec(7, target=JVM).workload.duration_s == master.workload.duration_s + 15.0
    assert ROLLING.spec(7, target=BROKER_REF_TRAITS) == quick


def test_spaced_out_keeps_each_faults_length() -> None:
    ops = (
        FaultOp(1.0, "start", "kill", "n1", "a"),
        FaultOp(2.0, "start", "kill", "n2", "b"),
        FaultOp(3.0, "stop", "kill", "n1", "a"),
        FaultOp(4.0, "stop", "kill", "n2", "b"),
    )
    assert [op.at_s for op in spaced_out(ops, 10.0)] == [1.0, 12.0, 3.0, 14.0]


def _facts(status: int | None) -> RunFacts:
    events: list[dict[str, Any]] = [
        {"v": 1, "time": 5 * NS, "kind": "fault.start", "node": None, "id": "f1",
         "fault": "graceful_stop", "target": "n2", "roles": {}},
        {"v": 1, "time": 4 * NS, "kind": "node.stop", "node": "n2", "status": -9},  # before
    ]  # fmt: skip
    if status is not None:
        events.append({"v": 1, "time": 6 * NS, "kind": "node.stop", "node": "n2", "status": status})
    return RunFacts.gather(events, None)


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (0, None),
        (143, None),  # a JVM ended by SIGTERM
        (-9, "n2 (f1) did not stop by itself: killed (status -9)"),
        (137, "n2 (f1) did not stop by itself: killed (status 137)"),
        (None, "n2 (f1) was never seen stopping after f1:start"),
    ],
)
def test_stopped_cleanly_reads_the_nodes_stop_status(
    status: int | None, reason: str | None
) -> None:
    assert StoppedCleanly("f1").unmet(_facts(status)) == reason


def test_a_gap_that_begins_after_the_moment_counts_when_asked() -> None:
    """A node stopped gracefully serves a moment longer: the gap 7.0–14.0 began 2 s after
    f1:start (5.0); by default it is not f1's, with begins_within_s it is, timed from 7.0."""
    late = (Window(7.0, 14.0),)
    assert ServiceResumed("f1:start", 5.0).unmet(_windowed(late)) is None
    reason = ServiceResumed("f1:start", 5.0, begins_within_s=3.0).unmet(_windowed(late))
    assert reason == (
        "service resumed 7.00 s after it stopped, 2.00 s after f1:start, expected within 5 s"
    )
    assert ServiceResumed("f1:start", 8.0, begins_within_s=3.0).unmet(_windowed(late)) is None
    assert ServiceResumed("f1:start", 5.0, begins_within_s=1.0).unmet(_windowed(late)) is None
