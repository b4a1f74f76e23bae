"""The cluster manager's decisions, one round at a time, against brokers played by a fake:
restart what is down, fence what hangs, promote exactly one ready backup (or the first
primary of a new cluster), give up when there is no candidate, move the virtual address."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from lab.ground.cluster_settings import ActivePassiveSettings
from lab.manager.manager import DOWN, STARTING, ClusterManager

FAST = ActivePassiveSettings(status_poll_interval_s=0.05, status_timeout_s=0.2)


class _Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, dict[str, Any]]] = []

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        self.seen.append((kind, node, fields))

    def kinds(self) -> list[str]:
        return [k for k, _, _ in self.seen]


class _Brokers:
    """Brokers whose statuses the test sets; what the manager orders is logged."""

    def __init__(self, statuses: dict[str, str | None]) -> None:
        self.status = dict(statuses)
        self.orders: list[str] = []
        self.hang: set[str] = set()
        self.release = threading.Event()  # a hung check answers once the test sets it
        self.answered = threading.Event()

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(sorted(self.status))

    def running(self, name: str) -> bool:
        return self.status[name] != DOWN

    def ha_status(self, name: str, timeout_s: float) -> str | None:
        if name in self.hang:
            self.release.wait(timeout=60)  # a check that outlives its round
            self.answered.set()
        return self.status[name]

    def restart(self, name: str) -> None:
        self.orders.append(f"restart {name}")
        self.status[name] = "joining"

    def fence(self, name: str) -> None:
        self.orders.append(f"fence {name}")
        self.hang.discard(name)
        self.status[name] = "joining"

    def promote(self, name: str) -> None:
        self.orders.append(f"promote {name}")
        self.status[name] = "recovering"

    def point_vip(self, name: str) -> None:
        self.orders.append(f"vip {name}")


def _manager(statuses: dict[str, str | None]) -> tuple[ClusterManager, _Brokers, _Events]:
    brokers = _Brokers(statuses)
    events = _Events()
    return ClusterManager(brokers, FAST, events), brokers, events


def test_a_new_cluster_gets_its_first_primary_when_every_broker_is_joining() -> None:
    manager, brokers, events = _manager({"n1": "joining", "n2": "joining", "n3": STARTING})
    manager.poll()
    assert brokers.orders == [], "a broker still starting: nothing is decided yet"
    brokers.status["n3"] = "joining"
    manager.poll()
    assert brokers.orders == ["promote n1", "vip n1"]
    assert events.kinds() == ["manager.promote", "manager.vip"]


def test_a_crashed_primary_is_restarted_and_a_ready_backup_promoted() -> None:
    manager, brokers, _ = _manager({"n1": "active", "n2": "ready", "n3": "ready"})
    manager.poll()
    assert brokers.orders == ["vip n1"]
    brokers.status["n1"] = DOWN
    manager.poll()
    # The promotion first: restarting the crashed broker never holds it up.
    assert brokers.orders[1:] == ["promote n2", "vip n2", "restart n1"]
    manager.poll()  # n1 joins again as a backup; n2 stays the primary
    assert brokers.orders[4:] == []


def test_a_backup_still_catching_up_is_never_promoted_and_the_manager_gives_up() -> None:
    manager, brokers, events = _manager({"n1": DOWN, "n2": "catchup"})
    manager.poll()
    assert brokers.orders == ["restart n1"]
    assert events.kinds() == ["manager.restart"]  # decided once every broker answers
    manager.poll()
    assert events.kinds() == ["manager.restart", "manager.no-candidate"]
    assert events.seen[-1][2]["statuses"] == {"n1": "joining", "n2": "catchup"}
    brokers.status["n2"] = "ready"
    manager.poll()
    assert "promote n2" not in brokers.orders, "a manager that gave up waits for a restart"


def test_after_a_whole_cluster_restart_the_last_primary_is_promoted_first() -> None:
    manager, brokers, _ = _manager({"n1": "ready", "n2": "active", "n3": "ready"})
    manager.poll()
    for name in brokers.status:
        brokers.status[name] = "joining"
    manager.poll()
    assert brokers.orders == ["vip n2", "promote n2"]  # the address already reaches n2


def test_a_hung_primary_is_fenced_before_a_backup_is_promoted() -> None:
    manager, brokers, events = _manager({"n1": "active", "n2": "ready", "n3": "ready"})
    manager.poll()
    brokers.hang.add("n1")
    try:
        manager.poll()
        assert not brokers.answered.is_set(), "the round waited for the hung check"
    finally:
        brokers.release.set()
    assert brokers.orders[1:] == ["fence n1", "promote n2", "vip n2"]
    fence = next(f for k, n, f in events.seen if k == "manager.fence")
    assert fence["timeout_s"] == FAST.status_timeout


def test_a_fenced_primary_is_the_one_promoted_when_the_cluster_comes_back_joining() -> None:
    """The primary held the only up-to-date store (its backup restarted and never caught up,
    the third never authenticated); fenced for a slow answer, it comes back joining with the
    others, and the cluster restarts from it, not from the first broker by name."""
    manager, brokers, events = _manager({"n1": "ready", "n2": "active", "n3": "joining"})
    manager.poll()
    brokers.status["n1"] = "joining"  # restarted after a crash, never caught up
    brokers.hang.add("n2")
    try:
        manager.poll()
    finally:
        brokers.release.set()
    assert brokers.orders == ["vip n2", "fence n2"]  # no ready backup: no promotion yet
    manager.poll()
    assert brokers.orders[2:] == ["promote n2"]  # the address already reaches n2
    promote = next(f for k, n, f in events.seen if k == "manager.promote")
    assert promote["statuses"] == {"n1": "joining", "n2": "joining", "n3": "joining"}


def test_two_primaries_are_reported_once_and_the_virtual_address_stays() -> None:
    manager, brokers, events = _manager({"n1": "active", "n2": "ready", "n3": "ready"})
    manager.poll()
    brokers.status["n2"] = "recovering"  # an operator promoted it by hand
    manager.poll()
    manager.poll()
    assert events.kinds().count("manager.two-primaries") == 1
    assert brokers.orders == ["vip n1"]


def test_the_manager_is_a_fault_target_stopped_frozen_and_started_again() -> None:
    manager, brokers, events = _manager({"n1": "joining", "n2": "joining"})
    manager.start()
    try:
        deadline = time.monotonic() + 60  # only a hung manager takes this long
        while "promote n1" not in brokers.orders:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        manager.freeze()
        brokers.status["n1"] = DOWN
        time.sleep(0.3)
        assert "restart n1" not in brokers.orders, "a frozen manager does nothing"
        manager.thaw()
        deadline = time.monotonic() + 60  # only a hung manager takes this long
        while "restart n1" not in brokers.orders:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        manager.close()
    assert not manager.running
    kinds = events.kinds()
    assert kinds[0] == "manager.start" and "manager.freeze" in kinds and kinds[-1] == "manager.stop"


@pytest.mark.parametrize("status", ["joining", "catchup", STARTING])
def test_no_candidate_waits_for_every_broker_to_answer(status: str) -> None:
    manager, _, events = _manager({"n1": status, "n2": STARTING})
    manager.poll()
    assert "manager.no-candidate" not in events.kinds()
