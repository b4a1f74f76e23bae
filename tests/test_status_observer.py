"""The observer that replaces the cluster manager for brokers that activate themselves: it
records each broker's role and HA status when they change from what the run recorded (its
log lines may have said it first), forgets a restarted broker's, and says nothing for a
broker that does not answer."""

from __future__ import annotations

import time
from typing import Any

import pytest

from lab.ground.errors import ClusterError
from lab.ground.nodes import NodeStatus
from lab.manager.observer import NodeStates, StatusObserver


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, dict[str, Any]]] = []

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
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
    states = NodeStates(events)
    observer = StatusObserver(brokers, states)
    brokers.answer = NodeStatus("n1", "MASTER", ha_status="recovering")
    observer.observe("n1")
    observer.observe("n1")  # nothing new
    brokers.answer = NodeStatus("n1", "MASTER", ha_status="active")
    observer.observe("n1")
    brokers.answer = None  # frozen, starting: no answer, nothing said
    observer.observe("n1")
    states.emit("node.start", "n1", pid=1)  # started again: the same answer is news
    brokers.answer = NodeStatus("n1", "MASTER", ha_status="active")
    observer.observe("n1")
    assert [e for e in events.seen if e[0] != "node.start"] == [
        ("node.role", "n1", {"previous": None, "role": "MASTER"}),
        ("node.ha", "n1", {"previous": None, "status": "recovering"}),
        ("node.ha", "n1", {"previous": "recovering", "status": "active"}),
        ("node.role", "n1", {"previous": None, "role": "MASTER"}),
        ("node.ha", "n1", {"previous": None, "status": "active"}),
    ]
    assert states.last("n1") == ("MASTER", "active")


def test_what_a_log_line_said_first_is_not_said_again() -> None:
    brokers, events = Brokers(), Events()
    states = NodeStates(events)
    states.emit("node.role", "n1", role="REPLICA")  # its log: synchronized with its primary
    states.emit("node.ha", "n1", status="ready")
    brokers.answer = NodeStatus("n1", "REPLICA", ha_status="ready")
    StatusObserver(brokers, states).observe("n1")
    assert len(events.seen) == 2


def test_an_answer_asked_before_the_last_recorded_change_is_older_news() -> None:
    events = Events()
    states = NodeStates(events)
    asked_at = time.monotonic()
    states.emit("node.role", "n1", role="MASTER")  # its log: active, while it was asked
    states.answered("n1", asked_at, "WAITING", "joining")  # the answer predates the line
    states.answered("n1", time.monotonic(), "MASTER", "recovering")
    assert [fields for _, _, fields in events.seen] == [
        {"previous": None, "role": "MASTER"},
        {"previous": None, "status": "recovering"},
    ]


def test_an_answer_from_a_broker_killed_or_restarted_meanwhile_is_dropped() -> None:
    brokers, events = Brokers(), Events()
    states = NodeStates(events)
    brokers.answer = NodeStatus("n1", "MASTER", ha_status="active")
    brokers.up = False
    StatusObserver(brokers, states).observe("n1")
    assert events.seen == []


def test_the_observer_starts_and_stops_its_threads() -> None:
    brokers, events = Brokers(), Events()
    brokers.answer = NodeStatus("n1", "REPLICA", ha_status="ready")
    observer = StatusObserver(brokers, NodeStates(events), interval_s=0.01)
    observer.start()
    observer.stop()
    assert not observer.running
    kinds = [kind for kind, _, _ in events.seen]
    assert kinds[0] == "observer.start" and kinds[-1] == "observer.stop"


def test_a_look_that_fails_is_said_once_and_the_watch_goes_on() -> None:
    class Failing(Brokers):
        def __init__(self) -> None:
            super().__init__()
            self.failures = 3

        def node_status(self, name: str, timeout_s: float) -> NodeStatus | None:
            if self.failures:
                self.failures -= 1
                raise ClusterError("Toxiproxy API on 127.0.0.1:1: Expecting value")
            return NodeStatus("n1", "MASTER", ha_status="active")

    brokers, events = Failing(), Events()
    observer = StatusObserver(brokers, NodeStates(events), interval_s=0.01)
    observer.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(k == "node.role" for k, _, _ in events.seen):
        time.sleep(0.01)
    observer.stop()
    errors = [(n, f["error"]) for k, n, f in events.seen if k == "observer.error"]
    assert errors == [("n1", "Toxiproxy API on 127.0.0.1:1: Expecting value")]
    assert ("node.role", "n1", {"previous": None, "role": "MASTER"}) in events.seen


def test_a_peer_link_that_could_not_be_closed_is_closed_at_the_next_look() -> None:
    from lab.backends.managed import ManagedCluster

    class Proxies:
        def __init__(self) -> None:
            self.fail, self.calls = True, list[tuple[str, bool]]()

        def set_enabled(self, link: str, up: bool) -> None:
            if self.fail:
                self.fail = False
                raise ClusterError("Toxiproxy API on 127.0.0.1:1: Expecting value")
            self.calls.append((link, up))

    cluster = object.__new__(ManagedCluster)
    proxies = Proxies()
    cluster.__dict__.update(proxies={"n1_to_n3": 1, "n3_to_n1": 2})
    cluster.proxy_client = lambda: proxies  # type: ignore[method-assign,assignment,return-value]
    with pytest.raises(ClusterError):
        cluster._gate_peer_links("n3", False)
    cluster._gate_peer_links("n3", False)  # n3 still down: the link into it is closed now
    cluster._gate_peer_links("n3", False)  # and only once
    assert proxies.calls == [("n1_to_n3", False)]
