"""Faults that wait for the cluster (`when`): as data, checked, parsed from an incident, and
applied by the nemesis when the cluster shows what they wait for — against fake clusters whose
statuses change on a clock of the test's own."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from faults.nemesis import Nemesis
from faults.schedule_check import check_schedule
from lab.ground.errors import InputError, UsageError
from lab.ground.faultops import FaultOp, ops_from_json
from lab.ground.nodes import NodeStatus
from lab.run.incident import load_incident
from scenarios.base import fault_when, fault_window

NODES = ("n1", "n2", "n3")
NS = 1_000_000_000


def test_a_waiting_fault_round_trips_and_its_heal_is_placed_at_the_latest() -> None:
    start, stop = fault_when("new-master", 10.0, "kill", "@master", 3.0, 2.0, "f1")
    assert (start.when, start.within_s, stop.after_s, stop.at_s) == ("new-master", 10.0, 2.0, 15.0)
    assert ops_from_json([start.to_json(), stop.to_json()]) == (start, stop)
    plain = fault_window("kill", "n1", 3.0, 2.0, "f2")
    assert "when" not in plain[0].to_json() and "after_s" not in plain[1].to_json()
    check_schedule((start, stop), NODES, 20.0)


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda: FaultOp(1.0, "start", "kill", "n1", "f1", when="never"), "one of new-master"),
        (lambda: FaultOp(1.0, "start", "kill", "n1", "f1", when="catchup"), "within_s > 0"),
        (lambda: FaultOp(1.0, "stop", "kill", "n1", "f1", when="catchup", within_s=1), "start"),
        (lambda: FaultOp(1.0, "start", "kill", "n1", "f1", after_s=1.0), "for a stop"),
    ],
)
def test_a_trigger_that_makes_no_sense_is_refused(make: Any, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        make()


def test_the_schedule_checker_wants_the_heal_of_a_waiting_fault_after_it_struck() -> None:
    start, stop = fault_when("catchup", 4.0, "kill", "@master", 3.0, 2.0, "f1")
    with pytest.raises(UsageError, match="needs after_s"):
        check_schedule((start, replace(stop, after_s=None)), NODES, 20.0)
    with pytest.raises(UsageError, match="the latest the heal can come"):
        check_schedule((start, replace(stop, at_s=6.0)), NODES, 20.0)
    plain_start, plain_stop = fault_window("kill", "n1", 3.0, 2.0, "f2")
    with pytest.raises(UsageError, match="after_s is for the heal of a fault with `when`"):
        check_schedule((plain_start, replace(plain_stop, after_s=2.0)), NODES, 20.0)


INCIDENT = """\
scenario = "incident"
[topology]
nodes = 3
[workload]
duration_s = 20.0
[[fault]]
id = "f1"
fault = "kill"
target = "@master"
start_s = 3.0
when = "new-master"
within_s = 6.0
length_s = 1.5
"""


def test_an_incident_says_when_a_fault_waits(tmp_path: Path) -> None:
    path = tmp_path / "incident.toml"
    path.write_text(INCIDENT, encoding="utf-8")
    spec = load_incident(path)
    assert spec.schedule == fault_when("new-master", 6.0, "kill", "@master", 3.0, 1.5, "f1")
    for bad, said in (
        ('when = "new-master"', 'when = "soon"'),
        ("length_s = 1.5", "end_s = 9.0"),
        ("within_s = 6.0\n", ""),
    ):
        path.write_text(INCIDENT.replace(bad, said), encoding="utf-8")
        with pytest.raises(InputError) as refused:
            load_incident(path)
        assert "fault[1]." in str(refused.value) and "\n" not in str(refused.value)


class _Clock:
    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


class _Cluster:
    """Statuses that change at given times of the test's clock; every fault recorded."""

    node_names = NODES

    def __init__(self, clock: _Clock, timeline: list[tuple[float, dict[str, NodeStatus]]]):
        self.clock = clock
        self.timeline = timeline
        self.done: list[tuple[str, str, float]] = []

    def statuses(self) -> dict[str, NodeStatus | None]:
        now = self.clock.ns / NS
        current = self.timeline[0][1]
        for at, statuses in self.timeline:
            if at <= now:
                current = statuses
        return dict(current)

    def roles(self) -> dict[str, str | None]:
        return {n: (s.role if s else None) for n, s in self.statuses().items()}

    def kill(self, name: str) -> None:
        self.done.append(("kill", name, self.clock.ns / NS))

    def restart(self, name: str) -> None:
        self.done.append(("restart", name, self.clock.ns / NS))


def _status(**roles: str) -> dict[str, NodeStatus]:
    return {n: NodeStatus(n, r) for n, r in roles.items()}


def _run(cluster: _Cluster, clock: _Clock, schedule: tuple[FaultOp, ...]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []

    class _Events:
        def emit(self, kind: str, node: str | None, **fields: Any) -> None:
            events.append({"kind": kind, **fields})

    def tick() -> None:
        clock.ns += 50_000_000  # the test's time moves only as the nemesis waits

    with Nemesis(cluster, events=_Events(), clock_ns=clock) as nemesis:
        nemesis.run(schedule, started_at_ns=0, tick=tick)
    return events


def test_kill_whichever_node_becomes_master_next(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("faults.nemesis.time.sleep", lambda s: None)
    clock = _Clock()
    cluster = _Cluster(
        clock,
        [
            (0.0, _status(n1="MASTER", n2="REPLICA", n3="REPLICA")),
            (4.0, _status(n1="WAITING", n2="WAITING", n3="WAITING")),
            (5.0, _status(n1="WAITING", n2="REPLICA", n3="MASTER")),
        ],
    )
    events = _run(cluster, clock, fault_when("new-master", 10.0, "kill", "@master", 2.0, 1.0, "f1"))
    kills = [d for d in cluster.done if d[0] == "kill"]
    assert [k[1] for k in kills] == ["n3"]  # not n1, the master when it was armed
    assert 5.0 <= kills[0][2] < 5.5
    restart = next(d for d in cluster.done if d[0] == "restart")
    assert restart[2] - kills[0][2] == pytest.approx(1.0, abs=0.11)  # after_s from the strike
    fired = next(e for e in events if e["kind"] == "fault.trigger")
    assert fired["fired"] is True and fired["waited_s"] == pytest.approx(3.0, abs=0.11)


def test_a_trigger_that_never_comes_strikes_at_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("faults.nemesis.time.sleep", lambda s: None)
    clock = _Clock()
    cluster = _Cluster(clock, [(0.0, _status(n1="MASTER", n2="REPLICA", n3="REPLICA"))])
    events = _run(
        cluster,
        clock,
        (
            *fault_when("catchup", 3.0, "kill", "@master", 2.0, 1.0, "f1"),
            *fault_window("kill", "n2", 2.5, 0.5, "f2"),  # a timed fault meanwhile still runs
        ),
    )
    assert [(d[0], d[1]) for d in cluster.done] == [
        ("kill", "n2"),
        ("restart", "n2"),
        ("kill", "n1"),
        ("restart", "n1"),
    ]
    assert cluster.done[0][2] == pytest.approx(2.5, abs=0.06)
    assert cluster.done[2][2] == pytest.approx(5.0, abs=0.11)
    fired = next(e for e in events if e["kind"] == "fault.trigger")
    assert fired["fired"] is False


def test_a_replica_falling_behind_and_a_node_rejoining(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("faults.nemesis.time.sleep", lambda s: None)
    clock = _Clock()

    def at(txid2: int, role3: str) -> dict[str, NodeStatus]:
        return {
            "n1": NodeStatus("n1", "MASTER", 100),
            "n2": NodeStatus("n2", "REPLICA", txid2),
            "n3": NodeStatus("n3", role3, 100),
        }

    cluster = _Cluster(
        clock, [(0.0, at(100, "WAITING")), (3.0, at(70, "WAITING")), (6.0, at(100, "REPLICA"))]
    )
    _run(
        cluster,
        clock,
        (
            *fault_when("catchup", 8.0, "kill", "n2", 1.0, 0.5, "f1"),
            *fault_when("rejoined", 8.0, "kill", "n1", 1.0, 0.5, "f2"),
        ),
    )
    kills = {d[1]: d[2] for d in cluster.done if d[0] == "kill"}
    assert 3.0 <= kills["n2"] < 3.3  # 30 transactions behind its master
    assert 6.0 <= kills["n1"] < 6.3  # n3 a replica again


def test_the_moment_a_node_out_or_behind_counts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """`caught-up`: a replica seen behind (or out) since the step was armed is back within
    LAG_TXNS of its master; a replica that never fell behind, or one caught up before the
    step was armed, does not fire it."""
    monkeypatch.setattr("faults.nemesis.time.sleep", lambda s: None)
    clock = _Clock()

    def at(txid2: int, role3: str, txid3: int | None = None) -> dict[str, NodeStatus]:
        return {
            "n1": NodeStatus("n1", "MASTER", 100),
            "n2": NodeStatus("n2", "REPLICA", txid2),
            "n3": NodeStatus("n3", role3, txid3),
        }

    cluster = _Cluster(
        clock,
        [
            (0.0, at(100, "UNREACHABLE")),
            (3.0, at(100, "REPLICA", 50)),  # n3 back, 50 behind: catching up
            (5.0, at(95, "REPLICA", 85)),  # n3 within 20 (and n2 never fell behind)
        ],
    )
    _run(
        cluster,
        clock,
        (
            *fault_when("caught-up", 9.0, "kill", "@master", 1.0, 0.5, "f1"),
            # armed once n3 has caught up: nothing falls behind after, so its deadline
            *fault_when("caught-up", 2.0, "kill", "n2", 6.0, 0.5, "f2"),
        ),
    )
    kills = {d[1]: d[2] for d in cluster.done if d[0] == "kill"}
    assert 5.0 <= kills["n1"] < 5.3
    assert kills["n2"] == pytest.approx(8.0, abs=0.11)


def test_the_moment_a_backup_calls_itself_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    """`caught-up` in an active-passive cluster: a backup seen joining or in catch-up since
    the step was armed is `ready`; the primary killed then is the one of that moment."""
    monkeypatch.setattr("faults.nemesis.time.sleep", lambda s: None)
    clock = _Clock()

    def at(ha2: str | None) -> dict[str, NodeStatus]:
        second = NodeStatus("n2", "UNREACHABLE") if ha2 is None else NodeStatus("n2", "REPLICA")
        return {
            "n1": NodeStatus("n1", "MASTER", ha_status="active"),
            "n2": second if ha2 is None else replace(second, ha_status=ha2),
            "n3": NodeStatus("n3", "REPLICA", ha_status="ready"),
        }

    cluster = _Cluster(
        clock, [(0.0, at(None)), (2.0, at("joining")), (3.0, at("catchup")), (6.5, at("ready"))]
    )
    events = _run(cluster, clock, fault_when("caught-up", 9.0, "kill", "@master", 1.0, 0.5, "f1"))
    kills = [d for d in cluster.done if d[0] == "kill"]
    assert [k[1] for k in kills] == ["n1"] and 6.5 <= kills[0][2] < 6.8
    fired = next(e for e in events if e["kind"] == "fault.trigger")
    assert fired["fired"] is True
