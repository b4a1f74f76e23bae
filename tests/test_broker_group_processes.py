"""Real broker_ref groups of node processes talking to each other directly (no Toxiproxy)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from group_helpers import LocalGroup, until
from proton import ProtonException


def _depths(group: LocalGroup) -> dict[str, int]:
    return {n: group.request(n)[1]["queues"].get("q", {}).get("depth", 0) for n in group.configs}


@pytest.mark.processes
def test_a_group_elects_one_master_replicates_and_fails_over(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = make_group(3)
    master = group.master()
    group.send(master, 30, "a")
    until(lambda: _depths(group), lambda d: d == {n: 30 for n in group.configs})
    replica = next(n for n in group.configs if n != master)
    assert group.request(replica)[1]["role"] == "REPLICA"
    group.kill(master)
    new_master = group.master()
    assert new_master != master
    group.send(new_master, 5, "b")
    assert group.request(new_master)[1]["queues"]["q"]["depth"] == 35
    group.start(master)
    group.wait_for(lambda r: r.get(master) == "REPLICA")
    until(lambda: _depths(group)[master], lambda depth: depth == 35)
    assert "HA-1010" in group.oplog(new_master) and "MST-1006" in group.oplog(new_master)


@pytest.mark.processes
def test_management_validates_and_authenticates(make_group: Callable[..., LocalGroup]) -> None:
    group = make_group(3)
    master = group.master()
    replica = next(n for n in group.configs if n != master)
    bad = [
        {"priority": 7},
        {"quorumOverride": 4},
        {"designatedPrimary": True},
        {"role": "REPLICA"},
        {"colour": "blue"},
    ]
    for change in bad:
        status, body = group.request(replica, "POST", change)
        assert status == 422, change
        assert body["errorMessage"]
    assert group.request(replica, "POST", {"priority": 3}, auth="admin:nope")[0] == 401
    assert group.request(replica)[1]["priority"] == 1
    for value in (2, 3, 0, 2):  # a change answered 200 is applied: the next read sees it
        assert group.request(replica, "POST", {"priority": value})[0] == 200
        assert group.request(replica)[1]["priority"] == value
    deadline = time.monotonic() + 60
    while True:  # the view is as fresh as the last heartbeat
        view = group.request(replica, what="remotereplicationnode")[1]
        if {v["role"] for v in view} == {"MASTER", "REPLICA"} or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert sorted(v["name"] for v in view) == sorted(n for n in group.configs if n != replica)
    assert {v["role"] for v in view} == {"MASTER", "REPLICA"}


@pytest.mark.processes
def test_transfer_master_moves_mastership(make_group: Callable[..., LocalGroup]) -> None:
    group = make_group(3)
    master = group.master()
    chosen = next(n for n in group.configs if n != master)
    group.send(master, 10, "t")
    assert group.request(chosen, "POST", {"role": "MASTER"})[0] == 200
    group.wait_for(lambda r: r.get(chosen) == "MASTER" and r.get(master) == "REPLICA")
    assert "HA-1007" in group.oplog(master)
    assert group.request(chosen)[1]["queues"]["q"]["depth"] == 10


@pytest.mark.processes
def test_an_intruder_is_refused(make_group: Callable[..., LocalGroup]) -> None:
    group = make_group(3, all={"permitted_nodes": ["n1", "n2", "n3"]})
    group.master()
    stranger = make_group(2, start=False)
    config = stranger.configs["n1"]
    config["name"] = "n9"
    config["peers"] = {"n1": f"127.0.0.1:{group.ports['n1'][2]}"}
    config["permitted_nodes"] = ["n9", "n1"]
    stranger.configs = {"n9": config}
    stranger.start("n9")
    deadline = time.monotonic() + 60
    while "HA-1008" not in group.oplog("n1") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "Intruder detected : Node 'n9'" in group.oplog("n1")
    assert group.roles()["n1"] in ("MASTER", "REPLICA")


@pytest.mark.processes
def test_both_nodes_designated_primary_refuse_to_start(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = make_group(2, all={"designated_primary": True})
    for proc in group.procs.values():
        assert proc.wait(timeout=20) == 2
    assert "both nodes of the group are designated primary" in group.oplog("n1") + group.oplog("n2")


@pytest.mark.processes
def test_quorum_loss_stops_service_and_override_restores_it(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = make_group(3)
    master = group.master()
    group.send(master, 5, "q")
    others = [n for n in group.configs if n != master]
    group.kill(master)
    group.kill(others[0])
    survivor = others[1]
    group.wait_for(lambda r: r.get(survivor) == "WAITING")
    with pytest.raises(ProtonException):  # refused or closed: no service
        group.send(survivor, 1, "refused")
    assert group.request(survivor, "POST", {"quorumOverride": 1})[0] == 200
    group.wait_for(lambda r: r.get(survivor) == "MASTER")
    group.send(survivor, 1, "after")
    assert group.request(survivor)[1]["queues"]["q"]["depth"] == 6
