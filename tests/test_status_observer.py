"""The observer that replaces the cluster manager for brokers that activate themselves: it
records each broker's role and HA status when they change, forgets a restarted broker's, and
says nothing for a broker that does not answer."""

from __future__ import annotations

from typing import Any

from lab.ground.nodes import NodeStatus
from lab.manager.observer import Seen, StatusObserver


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, dict[str, Any]]] = []

    def emit(self, kind: str, node: str | None, **fields: Any) -> None:
        self.seen.append((kind, node, fields))


class Brokers:
    node_names = ("n1",)

    def __init__(self) -> None:
        self.life = 1
        self.up = True
        self.answer: NodeStatus | None = None

    def starts(self, name: str) -> int:
        return self.life

    def running(self, name: str) -> bool:
        return self.up

    def node_status(self, name: str, timeout_s: float) -> NodeStatus | None:
        return self.answer


def test_changes_are_recorded_once_and_a_restart_is_a_new_life() -> None:
    brokers, events = Brokers(), Events()
    observer = StatusObserver(brokers, events)
    seen = Seen()
    brokers.answer = NodeStatus("n1", "MASTER", ha_status="recovering")
    seen = observer.observe("n1", seen)
    seen = observer.observe("n1", seen)  # nothing new
    brokers.answer = NodeStatus("n1", "MASTER", ha_status="active")
    seen = observer.observe("n1", seen)
    brokers.answer = None  # killed, frozen, starting: no answer, nothing said
    seen = observer.observe("n1", seen)
    brokers.life = 2  # started again: the same answer is news
    brokers.answer = NodeStatus("n1", "MASTER", ha_status="active")
    seen = observer.observe("n1", seen)
    assert events.seen == [
        ("node.role", "n1", {"role": "MASTER", "previous": None}),
        ("node.ha", "n1", {"status": "recovering", "previous": None}),
        ("node.ha", "n1", {"status": "active", "previous": "recovering"}),
        ("node.role", "n1", {"role": "MASTER", "previous": None}),
        ("node.ha", "n1", {"status": "active", "previous": None}),
    ]
    assert seen == Seen("MASTER", "active", 2)


def test_an_answer_from_a_broker_killed_meanwhile_is_dropped() -> None:
    brokers, events = Brokers(), Events()
    brokers.answer = NodeStatus("n1", "MASTER", ha_status="active")
    brokers.up = False
    assert StatusObserver(brokers, events).observe("n1", Seen(life=1)) == Seen(life=1)
    assert events.seen == []


def test_the_observer_starts_and_stops_its_threads() -> None:
    brokers, events = Brokers(), Events()
    brokers.answer = NodeStatus("n1", "REPLICA", ha_status="ready")
    observer = StatusObserver(brokers, events, interval_s=0.01)
    observer.start()
    observer.stop()
    assert not observer.running
    kinds = [kind for kind, _, _ in events.seen]
    assert kinds[0] == "observer.start" and kinds[-1] == "observer.stop"
