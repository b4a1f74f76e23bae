"""broker_ref in active-passive mode, node processes talking to each other directly: brokers
that never promote themselves, promotion and its refusals, catch-up to ready, a recovering
primary, consumed-before-replicated messages, per-queue replication, non-durable messages
after a total failure, and HA authentication."""

from __future__ import annotations

import io
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from group_helpers import LocalGroup, until
from proton import Link, Message, ProtonException, symbol
from proton.reactor import LinkOption
from proton.utils import BlockingConnection

from broker_ref.active_passive import ActivePassive, PromotionRefused
from broker_ref.config import parse_config
from broker_ref.frame_log import FrameLog
from broker_ref.group import Group
from broker_ref.ha_status import HaStatus, IllegalTransition, StatusTracker
from broker_ref.oplog import OperationalLog

AP = {"mode": "active-passive", "ha_replicate": "all", "link_heartbeat_interval_s": 0.5}
AP_FAST = {**AP, "link_maintenance_interval_s": 0.1, "ha_backup_timeout_s": 1.5}


class _Replicate(LinkOption):
    """A producer's target with `qpid.replicate` among its node properties."""

    def __init__(self, level: str) -> None:
        self.level = level

    def apply(self, link: Link) -> None:
        link.target.properties.put_dict({symbol("qpid.replicate"): self.level})


def _send(
    port: int, queue: str, ids: list[str], durable: bool = True, level: str | None = None
) -> None:
    conn = BlockingConnection(f"127.0.0.1:{port}", timeout=10)
    try:
        options = None if level is None else _Replicate(level)
        sender = conn.create_sender(queue, options=options)
        for mid in ids:
            sender.send(Message(id=mid, body=b"x" * 50, durable=durable), timeout=10)
    finally:
        conn.close()


def _ha(group: LocalGroup, name: str) -> dict[str, Any]:
    status, body = group.request(name, what="ha")
    assert status == 200, body
    return dict(body)


def _promote(group: LocalGroup, name: str) -> tuple[int, Any]:
    """Ask `name` to become the primary, as a cluster manager does. A broker answers
    `joining` from the moment its management listens, while it still recovers its store; a
    promotion then is refused as not up yet, and the manager asks again. Every other
    answer (granted, or refused for a reason of HA) is returned at once."""

    def starting(reply: tuple[int, Any]) -> bool:
        status, body = reply
        return status == 422 and "not up yet" in str((body or {}).get("errorMessage"))

    return until(
        lambda: group.request(name, "POST", {"action": "promote"}, what="ha"),
        lambda reply: not starting(reply),
        timeout_s=20.0,
    )


def _status_of(group: LocalGroup, name: str) -> str:
    status, body = group.request(name, what="ha")
    return str(body["status"]) if status == 200 else f"no answer ({status})"


def _wait_statuses(
    group: LocalGroup, want: dict[str, str], timeout_s: float = 20.0
) -> dict[str, str]:
    deadline = time.monotonic() + timeout_s
    seen: dict[str, str] = {}
    while time.monotonic() < deadline:
        seen = {n: _status_of(group, n) for n in want}
        if seen == want:
            return seen
        time.sleep(0.1)
    raise AssertionError(f"statuses {seen}, waited for {want}")


def _depth(group: LocalGroup, name: str, queue: str) -> int:
    queues = group.request(name)[1]["queues"]
    return int(queues.get(queue, {}).get("depth", 0))


def _cluster(make_group: Callable[..., LocalGroup], size: int = 3, **extra: Any) -> LocalGroup:
    group = make_group(size, all={**AP_FAST, **extra})
    _wait_statuses(group, {n: "joining" for n in group.configs})  # every broker answers
    return group


# ---- rules, without processes --------------------------------------------------------------------


def test_the_status_transitions_are_the_ha_modules() -> None:
    log = OperationalLog("n1", io.StringIO())
    tracker = StatusTracker(log)
    for status in (HaStatus.CATCHUP, HaStatus.READY, HaStatus.RECOVERING, HaStatus.ACTIVE):
        tracker.change(status)
    assert tracker.current is HaStatus.ACTIVE and tracker.current.primary
    with pytest.raises(IllegalTransition, match="active -> joining"):
        tracker.change(HaStatus.JOINING)
    with pytest.raises(IllegalTransition, match="joining -> ready"):
        StatusTracker(log).change(HaStatus.READY)


class _NoStore:
    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


def _mode(tmp_path: Path) -> ActivePassive:
    config = parse_config(
        {
            "name": "n1",
            "amqp_port": 1,
            "management_port": 2,
            "replication_port": 3,
            "data_dir": str(tmp_path),
            "peers": {"n2": "127.0.0.1:4", "n3": "127.0.0.1:5"},
            **AP,
        }
    )
    log = OperationalLog("n1", io.StringIO())
    group = Group(config, log, FrameLog(), _NoStore())  # type: ignore[arg-type]
    assert isinstance(group.mode, ActivePassive)
    return group.mode


def test_a_backup_still_catching_up_refuses_promotion(tmp_path: Path) -> None:
    mode = _mode(tmp_path)
    mode._status.change(HaStatus.CATCHUP)
    with pytest.raises(PromotionRefused, match="Still catching up, cannot be promoted"):
        mode.promote()
    assert mode.status is HaStatus.CATCHUP


def test_a_joining_broker_is_the_first_primary_when_no_peer_is_established(
    tmp_path: Path,
) -> None:
    mode = _mode(tmp_path)
    mode.promote()  # no peer has answered: a new cluster, all joining
    assert mode.status is HaStatus.ACTIVE  # no backups were ready before: nothing to recover
    assert mode.acks_needed() == 0


# ---- real clusters ------------------------------------------------------------------------------


@pytest.mark.processes
def test_without_a_manager_every_broker_stays_joining_and_serves_nobody(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = _cluster(make_group)
    time.sleep(1.5)
    assert {n: _ha(group, n)["status"] for n in group.configs} == {
        "n1": "joining",
        "n2": "joining",
        "n3": "joining",
    }
    with pytest.raises(ProtonException, match="not the master"):
        _send(group.ports["n1"][0], "q", ["m1"])


@pytest.mark.processes
def test_promotion_catch_up_ready_and_failover_to_a_ready_backup(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = _cluster(make_group)
    assert _promote(group, "n1")[0] == 200
    _wait_statuses(group, {"n1": "active", "n2": "ready", "n3": "ready"})
    assert group.request("n2")[1]["role"] == "REPLICA"
    _send(group.ports["n1"][0], "q", [f"a{i}" for i in range(30)])
    until(lambda: [_depth(group, n, "q") for n in ("n1", "n2", "n3")], [30, 30, 30].__eq__)
    with pytest.raises(ProtonException, match="not the master"):
        _send(group.ports["n2"][0], "q", ["refused"])
    group.kill("n1")
    assert _promote(group, "n2")[0] == 200
    _wait_statuses(group, {"n2": "active", "n3": "ready"})
    _send(group.ports["n2"][0], "q", [f"b{i}" for i in range(5)])
    until(lambda: [_depth(group, n, "q") for n in ("n2", "n3")], [35, 35].__eq__)
    group.start("n1")
    _wait_statuses(group, {"n1": "ready"})
    assert _depth(group, "n1", "q") == 35
    log = group.oplog("n2")
    assert "Status change : ready -> recovering" in log and "Promoted to primary" in log
    assert "Recovering backups : 'n3'" in log and "All backups recovered" in log


@pytest.mark.processes
def test_a_joining_broker_is_not_promoted_into_an_established_cluster(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = make_group(2, start=False, all=AP_FAST)
    group.configs["n2"]["link_maintenance_interval_s"] = 60  # it stays joining a while
    for name in group.configs:
        group.start(name)
    _wait_statuses(group, {"n1": "joining", "n2": "joining"})
    assert _promote(group, "n1")[0] == 200
    _wait_statuses(group, {"n1": "active"})
    # n2 refuses once it has heard that n1 is established (n1's heartbeats say so)
    until(lambda: _ha(group, "n2")["members"].get("n1"), "active".__eq__)
    status, body = _promote(group, "n2")
    assert status == 422, body
    assert body["errorMessage"] == "Joining active cluster, cannot be promoted."
    assert _status_of(group, "n2") == "joining"
    assert "REF-2009" in group.oplog("n2")


@pytest.mark.processes
def test_a_recovering_primary_holds_acknowledgements_until_the_backup_timeout(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = _cluster(make_group)
    assert _promote(group, "n1")[0] == 200
    _wait_statuses(group, {"n1": "active", "n2": "ready", "n3": "ready"})
    deadline = time.monotonic() + 10
    while _ha(group, "n1")["readyBackups"] != ["n2", "n3"]:
        assert time.monotonic() < deadline, _ha(group, "n1")
        time.sleep(0.05)
    time.sleep(0.3)  # the primary's next heartbeats tell its backups who is ready
    group.kill("n3")
    group.kill("n1")
    assert _promote(group, "n2")[0] == 200
    assert _ha(group, "n2")["status"] == "recovering", group.oplog("n2")
    _send(group.ports["n2"][0], "q", ["held"])  # returns once the message is settled
    settled_at = time.time()
    assert _ha(group, "n2")["status"] == "active"
    log = group.oplog("n2")
    timed_out = re.search(
        r"^(\S+) WARN \[n2\] REF-2005 : Recovering backup timed out : 'n3'", log, re.M
    )
    assert timed_out is not None, log
    stamp = time.strptime(timed_out.group(1)[:19], "%Y-%m-%dT%H:%M:%S")
    assert time.mktime(stamp) - time.timezone <= settled_at


@pytest.mark.processes
def test_messages_consumed_before_replication_are_settled_and_counted(
    make_group: Callable[..., LocalGroup],
) -> None:
    # A stopped backup stays ready to the primary for twice the link heartbeat: long enough
    # for the consumer below on a loaded machine (with 0.5 s it was dropped first, and the
    # message was settled without waiting for it, so nothing was consumed before replication).
    group = _cluster(make_group, 2, link_heartbeat_interval_s=10.0)
    assert _promote(group, "n1")[0] == 200
    _wait_statuses(group, {"n1": "active", "n2": "ready"})
    port = group.ports["n1"][0]
    group.procs["n2"].send_signal(signal.SIGSTOP)  # the backup holds no acknowledgement now
    try:
        conn = BlockingConnection(f"127.0.0.1:{port}", timeout=10)
        sender = conn.create_sender("q")
        receiver = conn.create_receiver("q", credit=10)
        delivery = sender.link.send(Message(id="m1", body=b"x", durable=True))
        got = receiver.receive(timeout=5)  # visible before the backup holds it
        receiver.accept()
        assert got.id == "m1"
        conn.wait(lambda: delivery.settled, timeout=5, msg="the producer was never settled")
        assert delivery.remote_state == delivery.ACCEPTED
        conn.close()
        assert _ha(group, "n1")["consumedBeforeReplication"] == 1
    finally:
        group.procs["n2"].send_signal(signal.SIGCONT)


@pytest.mark.processes
def test_a_queue_declared_replicate_none_stays_on_the_primary(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = _cluster(make_group, 2)
    assert _promote(group, "n1")[0] == 200
    _wait_statuses(group, {"n1": "active", "n2": "ready"})
    port = group.ports["n1"][0]
    _send(port, "kept", ["k1", "k2"], level="none")
    _send(port, "copied", ["c1", "c2", "c3"])
    until(lambda: _depth(group, "n2", "copied"), (3).__eq__)  # replicated after "kept"
    assert _depth(group, "n1", "kept") == 2 and _depth(group, "n2", "kept") == 0
    group.kill("n1")
    assert _promote(group, "n2")[0] == 200
    _wait_statuses(group, {"n2": "active"})
    assert "kept" not in group.request("n2")[1]["queues"]
    status, _ = group.request(
        "n2", "POST", {"action": "replicate", "queue": "copied", "level": "bogus"}, what="ha"
    )
    assert status == 422


@pytest.mark.processes
def test_non_durable_messages_fail_over_but_do_not_survive_a_total_failure(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = _cluster(make_group, 2)
    assert _promote(group, "n1")[0] == 200
    _wait_statuses(group, {"n1": "active", "n2": "ready"})
    port = group.ports["n1"][0]
    _send(port, "q", ["d1", "d2", "d3"])
    _send(port, "q", ["t1", "t2"], durable=False)
    until(lambda: _depth(group, "n2", "q"), (5).__eq__)
    group.kill("n1")
    assert _promote(group, "n2")[0] == 200
    _wait_statuses(group, {"n2": "active"})
    assert _depth(group, "n2", "q") == 5  # the backup held them in memory
    group.kill("n2")  # the whole cluster is down
    group.start("n2")
    group.start("n1")
    _wait_statuses(group, {"n1": "joining", "n2": "joining"})
    assert _promote(group, "n2")[0] == 200  # the first primary recovers from its store
    _wait_statuses(group, {"n2": "active", "n1": "ready"})
    assert _depth(group, "n2", "q") == 3 and _depth(group, "n1", "q") == 3


@pytest.mark.processes
def test_a_backup_with_the_wrong_ha_password_is_refused_and_never_ready(
    make_group: Callable[..., LocalGroup],
) -> None:
    secure = {"ha_auth": True, "ha_mechanism": "PLAIN", "ha_username": "ha", "ha_password": "s3"}
    group = make_group(2, start=False, all={**AP_FAST, **secure})
    group.configs["n2"]["ha_password"] = "wrong"
    for name in group.configs:
        group.start(name)
    _wait_statuses(group, {"n1": "joining", "n2": "joining"})
    assert _promote(group, "n1")[0] == 200
    _wait_statuses(group, {"n1": "active"})
    until(lambda: group.oplog("n2"), lambda log: "REF-2012" in log)  # its login was refused
    assert _ha(group, "n2")["status"] == "joining"
    assert "REF-2012" in group.oplog("n2") and "Client closed connection with 320" in group.oplog(
        "n2"
    )
    assert "REF-2013" in group.oplog("n1") and "Authentication failed for ha" in group.oplog("n1")


def test_nothing_past_a_catching_up_backups_target_is_settled_before_it_acknowledges(
    tmp_path: Path,
) -> None:
    """A backup that asked to join at transaction 40 catches up to 40; what the primary took
    after that reaches it only through its stream, so the primary settles nothing past 40
    that backup has not acknowledged, whatever the ready backups hold (else the backup,
    ready and promoted, would miss it)."""
    mode = _mode(tmp_path)
    frames = mode._core.frames
    for txid in range(1, 41):
        frames.append(txid, 1, b"frame")
    mode.on_sync("n2")  # n2's catch-up target: 40
    for txid in range(41, 101):
        frames.append(txid, 1, b"frame")
    mode.ready_backups = {"n3"}
    assert mode._guarded({"n2": 20, "n3": 100}) == 40
    assert mode._guarded({"n2": 70, "n3": 100}) == 70
    assert mode._guarded({"n3": 100}) == 40  # its stream has not started yet
    mode.ready_backups = {"n2", "n3"}  # once ready it is waited for as every ready backup is
    assert mode._guarded({"n2": 70, "n3": 100}) == 100
