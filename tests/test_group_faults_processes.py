"""Partitions and operator faults against real broker_ref groups behind Toxiproxy."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from faults.nemesis import Nemesis
from lab.backends.catalog import make_cluster
from lab.backends.process.cluster import ProcessCluster
from lab.ground.faultops import FaultOp
from lab.ground.spec import Durability, Topology
from lab.targets.broker_ref import BrokerRefTarget
from lab.targets.management import Credentials, ManagementClient, ManagementRefused

pytestmark = pytest.mark.processes


@pytest.fixture
def group(tmp_path: Path) -> Iterator[Callable[[int], ProcessCluster]]:
    started: list[ProcessCluster] = []

    def start(nodes: int) -> ProcessCluster:
        cluster = make_cluster(
            "process", BrokerRefTarget(), Topology(nodes), Durability(), tmp_path
        )
        assert isinstance(cluster, ProcessCluster)
        started.append(cluster)
        cluster.start()
        return cluster

    yield start
    for cluster in started:
        cluster.stop()


def _until(condition: Callable[[], bool], timeout_s: float = 8.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _op(action: str, fault: str, target: str, **params: object) -> FaultOp:
    return FaultOp(0.0, action, fault, target, "f1", params)  # type: ignore[arg-type]


def _masters(cluster: ProcessCluster) -> list[str]:
    return [n for n, r in cluster.roles().items() if r == "MASTER"]


@pytest.mark.parametrize("fault", ["partition", "isolate"])
def test_cutting_the_master_off_elects_another_and_the_heal_makes_the_group_whole(
    group: Callable[[int], ProcessCluster], fault: str
) -> None:
    cluster = group(3)
    old = cluster.wait_ready()
    params = {"sides": "@master|@replica:1,@replica:2"} if fault == "partition" else {}
    target = "group" if fault == "partition" else "@master"
    with Nemesis(cluster) as nemesis:
        nemesis.apply(_op("start", fault, target, **params))
        assert _until(lambda: any(m != old for m in _masters(cluster)))
        nemesis.apply(_op("stop", fault, target, **params))
    cluster.wait_ready(timeout_s=15.0)
    assert all(p.enabled for p in cluster.proxy_client().proxies().values())


def test_a_kill_as_a_hosts_crash_cuts_the_masters_links_while_it_is_dead(
    group: Callable[[int], ProcessCluster],
) -> None:
    """`kill` with `host: true` on the master: its proxies are disabled and its process
    dead until the heal, which enables them and starts it; it comes back as a replica."""
    cluster = group(3)
    old = cluster.wait_ready()
    proxies = cluster.proxy_client()
    with Nemesis(cluster) as nemesis:
        nemesis.apply(_op("start", "kill", "@master", host=True))
        cut = {n for n, p in proxies.proxies().items() if not p.enabled}
        assert cut == {f"{old}_to_{n}" for n in cluster.node_names if n != old} | {
            f"{n}_to_{old}" for n in cluster.node_names if n != old
        }
        assert _until(lambda: any(m != old for m in _masters(cluster)))
        assert cluster.roles()[old] is None  # dead, not merely cut off
        nemesis.apply(_op("stop", "kill", old, host=True))
    cluster.wait_ready(timeout_s=15.0)
    assert all(p.enabled for p in proxies.proxies().values())
    assert _until(lambda: cluster.roles()[old] == "REPLICA", timeout_s=15.0)


def _view(cluster: ProcessCluster, node: str) -> dict[str, str]:
    """Each other node's role as `node` sees it (UNREACHABLE: nothing heard from it)."""
    return {r["name"]: r["role"] for r in cluster.management(node).remote_nodes()}


def test_a_one_way_partition_stops_bytes_one_way_only_and_the_heal_restores_them(
    group: Callable[[int], ProcessCluster],
) -> None:
    cluster = group(3)
    old = cluster.wait_ready()
    sides = {"sides": "@master|@replica:1,@replica:2"}
    with Nemesis(cluster) as nemesis:
        nemesis.apply(_op("start", "one_way_partition", "group", **sides))
        others = [n for n in cluster.node_names if n != old]
        # The others hear nothing from the master: they elect one of their own...
        elected: list[str] = []

        def one_of_the_others() -> bool:
            masters = _masters(cluster)  # asked once: roles change between two asks
            elected[:] = masters
            return len(masters) == 1 and masters[0] in others

        assert _until(one_of_the_others)
        (new,) = elected
        assert all(_view(cluster, n)[old] == "UNREACHABLE" for n in others)
        # ...while what they send still reaches the old master: it knows the new master and
        # has stepped down, which a two-way partition would hide from it.
        (third,) = (n for n in others if n != new)
        assert _until(lambda: _view(cluster, old) == {new: "MASTER", third: "REPLICA"})
        assert cluster.roles()[old] != "MASTER"
        nemesis.apply(_op("stop", "one_way_partition", "group", **sides))
    assert cluster.wait_ready(timeout_s=15.0) == new
    assert _until(lambda: all(_view(cluster, n)[old] == "REPLICA" for n in others))
    client = cluster.proxy_client()
    assert all(p.enabled and not client.toxics(name) for name, p in client.proxies().items())


def test_operator_attributes_are_set_and_healed(group: Callable[[int], ProcessCluster]) -> None:
    cluster = group(2)
    master = cluster.wait_ready()
    api = cluster.management(master)
    with Nemesis(cluster) as nemesis:
        nemesis.apply(_op("start", "designate_primary", "@master"))
        assert api.node_attributes()["designatedPrimary"] is True
        nemesis.apply(_op("stop", "designate_primary", "@master"))
        assert api.node_attributes()["designatedPrimary"] is False
        nemesis.apply(_op("start", "set_priority", master, value=3))
        assert api.node_attributes()["priority"] == 3
    assert api.node_attributes()["priority"] == 1


def test_quorum_override_is_set_then_reverted(group: Callable[[int], ProcessCluster]) -> None:
    cluster = group(3)
    cluster.wait_ready()
    with Nemesis(cluster) as nemesis:
        nemesis.apply(_op("start", "quorum_override", "@replica:2", value=1))
        (pending,) = nemesis.heals.pending()  # the op as resolved: its target is a node name
        assert cluster.management(pending.target).node_attributes()["quorumOverride"] == 1
    assert cluster.management(pending.target).node_attributes()["quorumOverride"] == 0


def test_transfer_master_moves_mastership(group: Callable[[int], ProcessCluster]) -> None:
    cluster = group(3)
    old = cluster.wait_ready()
    with Nemesis(cluster) as nemesis:
        nemesis.apply(_op("start", "transfer_master", "@replica:1"))
        (pending,) = nemesis.heals.pending()
    chosen = pending.target
    assert chosen != old
    assert _until(lambda: _masters(cluster) == [chosen])
    assert cluster.wait_ready(timeout_s=15.0) == chosen


def test_the_management_api_refuses_bad_credentials_and_bad_values(
    group: Callable[[int], ProcessCluster],
) -> None:
    cluster = group(1)
    plan = cluster.node("n1").plan
    intruder = ManagementClient(
        f"http://127.0.0.1:{plan.management_port}", "n1", Credentials("admin", "wrong")
    )
    with pytest.raises(ManagementRefused) as refused:
        intruder.node_attributes()
    assert refused.value.status == 401
    with pytest.raises(ManagementRefused) as invalid:
        cluster.management("n1").set_attributes(priority=9)
    assert invalid.value.status == 422
    assert cluster.management("n1").node_attributes()["priority"] == 1
