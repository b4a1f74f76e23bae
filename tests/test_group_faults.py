"""Role selectors, partitions and operator faults, against fake clusters."""

from __future__ import annotations

from typing import Any

import pytest

from faults.nemesis import Nemesis
from faults.operator_faults import DesignatePrimary, QuorumOverride, SetPriority, TransferMaster
from faults.partition_faults import Isolate, OneWayPartition, Partition
from faults.process_faults import Kill
from faults.selectors import resolve_name, resolve_op, split_sides
from lab.ground.errors import ClusterError, UsageError
from lab.ground.faultops import FaultOp


def _op(fault: str, target: str, fault_id: str = "f1", **params: Any) -> FaultOp:
    return FaultOp(at_s=1.0, action="start", fault=fault, target=target, id=fault_id, params=params)


ROLES: dict[str, str | None] = {"n1": "REPLICA", "n2": "MASTER", "n3": "REPLICA"}


@pytest.mark.parametrize(
    ("name", "node"),
    [
        ("@master", "n2"),
        ("@replica", "n1"),
        ("@replica:1", "n1"),
        ("@replica:2", "n3"),
        ("n3", "n3"),
    ],
)
def test_selectors_pick_nodes_by_role_in_name_order(name: str, node: str) -> None:
    assert resolve_name(name, ROLES) == node


def test_a_node_that_does_not_answer_is_no_replica() -> None:
    roles = {"n1": None, "n2": "WAITING", "n3": "MASTER"}
    assert resolve_name("@replica", roles) == "n2"
    with pytest.raises(ClusterError, match="only 1"):
        resolve_name("@replica:2", roles)


def test_a_bad_selector_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        resolve_name("@leader", ROLES)


class _Roles:
    """A cluster whose roles change each time they are read."""

    node_names = ("n1", "n2", "n3")

    def __init__(self, *snapshots: dict[str, str | None]) -> None:
        self._snapshots = list(snapshots)
        self.reads = 0

    def roles(self) -> dict[str, str | None]:
        self.reads += 1
        return self._snapshots.pop(0) if len(self._snapshots) > 1 else self._snapshots[0]


def test_resolution_waits_for_an_election_to_finish() -> None:
    cluster = _Roles({"n1": "WAITING", "n2": "WAITING", "n3": None}, ROLES)
    resolved = resolve_op(cluster, _op("kill", "@master"), sleep=lambda s: None)
    assert resolved.target == "n2"
    assert cluster.reads == 2


def test_resolution_gives_up_naming_the_roles_it_saw() -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    cluster = _Roles({"n1": "WAITING", "n2": "WAITING", "n3": None})
    with pytest.raises(ClusterError, match="n1=WAITING"):
        resolve_op(cluster, _op("kill", "@master"), wait_s=3.0, clock=clock, sleep=lambda s: None)


def test_selectors_inside_link_names_and_partition_sides() -> None:
    cluster = _Roles(ROLES)
    assert resolve_op(cluster, _op("cut", "client_to_@master")).target == "client_to_n2"
    assert resolve_op(cluster, _op("latency", "@master_to_@replica:2")).target == "n2_to_n3"
    sides = resolve_op(cluster, _op("partition", "group", sides="@master|@replica:1,@replica:2"))
    assert sides.params["sides"] == "n2|n1,n3"


def test_an_op_without_selectors_is_not_resolved() -> None:
    op = _op("kill", "n1")
    assert resolve_op(object(), op) is op


@pytest.mark.parametrize("bad", ["n1", "n1|", "|n2", "n1|n1,n2", "n1|n2|n3"])
def test_bad_partition_sides_are_refused(bad: str) -> None:
    with pytest.raises(UsageError):
        split_sides(bad)


class _Proxies:
    """A fake Toxiproxy client and the Proxied + Linked + Roled abilities."""

    node_names = ("n1", "n2", "n3")

    def __init__(self, peer_links: bool = True) -> None:
        self.enabled: dict[str, bool] = {}
        self.toxics: dict[tuple[str, str], tuple[str, str, dict[str, int]]] = {}
        self.log: list[str] = []  # what was done to each link, in order
        self._peer_links = peer_links

    def set_enabled(self, link: str, enabled: bool) -> None:
        self.enabled[link] = enabled
        self.log.append(f"{'enable' if enabled else 'disable'} {link}")

    def add_toxic(
        self, proxy_name: str, toxic: str, kind: str, stream: str, attributes: dict[str, int]
    ) -> None:
        self.toxics[(proxy_name, toxic)] = (kind, stream, attributes)
        self.log.append(f"add {proxy_name} {toxic}")

    def remove_toxic(self, proxy_name: str, toxic: str) -> None:
        self.toxics.pop((proxy_name, toxic), None)
        self.log.append(f"remove {proxy_name} {toxic}")

    def proxy_client(self) -> _Proxies:
        return self

    def require_link(self, name: str) -> str:
        return name

    def require_proxy(self, name: str) -> str:
        return name

    def set_link(self, name: str, enabled: bool) -> None:
        self.set_enabled(name, enabled)

    def check_peer_links(self, how: str) -> None:
        if not self._peer_links:
            raise UsageError(f"node→node links have no proxy: they cannot be {how}")

    def roles(self) -> dict[str, str | None]:
        return dict(ROLES)


def test_partition_cuts_every_link_across_both_ways_and_heals_them() -> None:
    cluster = _Proxies()
    op = _op("partition", "group", sides="n1|n2,n3")
    Partition().apply(cluster, op)
    assert cluster.enabled == {
        "n1_to_n2": False,
        "n1_to_n3": False,
        "n2_to_n1": False,
        "n3_to_n1": False,
    }
    Partition().heal(cluster, op)
    assert all(cluster.enabled.values())
    assert "n2_to_n3" not in cluster.enabled  # a link within a side is never touched


def test_isolate_cuts_all_links_of_one_node() -> None:
    cluster = _Proxies()
    Isolate().apply(cluster, _op("isolate", "n3"))
    assert sorted(cluster.enabled) == ["n1_to_n3", "n2_to_n3", "n3_to_n1", "n3_to_n2"]
    with pytest.raises(UsageError):
        Isolate().apply(cluster, _op("isolate", "n9"))


class _Hosts(_Proxies):
    """Nodes that can be killed and restarted, behind the fake proxies."""

    def kill(self, name: str) -> None:
        self.log.append(f"kill {name}")

    def restart(self, name: str) -> None:
        self.log.append(f"restart {name}")


def test_a_kill_as_a_hosts_crash_cuts_the_nodes_links_first_and_restores_them_first() -> None:
    cluster = _Hosts()
    op = _op("kill", "n3", host=True)
    Kill().preflight(cluster, op)
    Kill().apply(cluster, op)
    links = ["n1_to_n3", "n2_to_n3", "n3_to_n1", "n3_to_n2"]
    assert sorted(cluster.log[:4]) == [f"disable {link}" for link in links]
    assert cluster.log[4:] == ["kill n3"]
    cluster.log.clear()
    Kill().heal(cluster, op)
    assert sorted(cluster.log[:4]) == [f"enable {link}" for link in links]
    assert cluster.log[4:] == ["restart n3"]
    assert all(cluster.enabled.values())
    # a plain kill touches no link; without proxies on node links a host's crash is refused
    plain = _Hosts()
    Kill().apply(plain, _op("kill", "n1"))
    assert plain.log == ["kill n1"]
    with pytest.raises(UsageError, match="cannot be cut"):
        Kill().preflight(_Hosts(peer_links=False), op)
    Kill().preflight(_Hosts(peer_links=False), _op("kill", "n1"))


def test_one_way_partition_blackholes_one_direction_of_each_link_across() -> None:
    cluster = _Proxies()
    op = _op("one_way_partition", "group", sides="n1|n2,n3")
    OneWayPartition().apply(cluster, op)
    # n1's bytes to n2 and n3: up its own connections, down theirs; nothing else
    assert cluster.toxics == {
        ("n1_to_n2", "f1_upstream"): ("timeout", "upstream", {"timeout": 0}),
        ("n2_to_n1", "f1_downstream"): ("timeout", "downstream", {"timeout": 0}),
        ("n1_to_n3", "f1_upstream"): ("timeout", "upstream", {"timeout": 0}),
        ("n3_to_n1", "f1_downstream"): ("timeout", "downstream", {"timeout": 0}),
    }
    assert cluster.enabled == {}  # no link is cut: the other direction flows
    OneWayPartition().heal(cluster, op)
    assert cluster.toxics == {}
    assert cluster.enabled == dict.fromkeys(("n1_to_n2", "n2_to_n1", "n1_to_n3", "n3_to_n1"), True)
    # each link's connections (which lost bytes) are closed before the toxic goes
    assert cluster.log[4:7] == [
        "disable n1_to_n2",
        "remove n1_to_n2 f1_upstream",
        "enable n1_to_n2",
    ]
    OneWayPartition().heal(cluster, op)  # idempotent
    assert cluster.toxics == {} and all(cluster.enabled.values())


def test_one_way_partition_the_other_way_round() -> None:
    cluster = _Proxies()
    OneWayPartition().apply(cluster, _op("one_way_partition", "group", sides="n2,n3|n1"))
    assert sorted(cluster.toxics) == [
        ("n1_to_n2", "f1_downstream"),
        ("n1_to_n3", "f1_downstream"),
        ("n2_to_n1", "f1_upstream"),
        ("n3_to_n1", "f1_upstream"),
    ]


def test_one_way_partition_needs_sides_and_proxied_node_links() -> None:
    fault = OneWayPartition()
    with pytest.raises(UsageError, match=r"one_way_partition needs params\.sides"):
        fault.preflight(_Proxies(), _op("one_way_partition", "group"))
    with pytest.raises(UsageError, match="no proxy"):
        fault.preflight(_Proxies(False), _op("one_way_partition", "group", sides="n1|n2"))
    with pytest.raises(ClusterError, match="with Toxiproxy"):
        fault.apply(object(), _op("one_way_partition", "group", sides="n1|n2"))


class _Node:
    def __init__(self, log: list[tuple[str, dict[str, Any]]], name: str, priority: int) -> None:
        self.log = log
        self.name = name
        self.priority = priority

    def node_attributes(self) -> dict[str, Any]:
        return {"name": self.name, "priority": self.priority}

    def set_attributes(self, **attributes: Any) -> None:
        self.log.append((self.name, attributes))
        self.priority = attributes.get("priority", self.priority)


class _Managed:
    def __init__(self) -> None:
        self.log: list[tuple[str, dict[str, Any]]] = []
        self.nodes = {n: _Node(self.log, n, 2) for n in ("n1", "n2")}

    def management(self, name: str) -> _Node:
        return self.nodes[name]


def test_designate_primary_and_its_heal() -> None:
    cluster = _Managed()
    op = _op("designate_primary", "n2")
    DesignatePrimary().apply(cluster, op)
    DesignatePrimary().heal(cluster, op)
    assert cluster.log == [
        ("n2", {"designatedPrimary": True}),
        ("n2", {"designatedPrimary": False}),
    ]


def test_quorum_override_and_its_heal_back_to_the_default() -> None:
    cluster = _Managed()
    op = _op("quorum_override", "n1", value=1)
    QuorumOverride().apply(cluster, op)
    QuorumOverride().heal(cluster, op)
    assert cluster.log == [("n1", {"quorumOverride": 1}), ("n1", {"quorumOverride": 0})]


def test_set_priority_heals_to_the_value_read_before() -> None:
    cluster = _Managed()
    op = _op("set_priority", "n1", value=0)
    fault = SetPriority()
    fault.apply(cluster, op)
    assert cluster.nodes["n1"].priority == 0
    fault.heal(cluster, op)
    fault.heal(cluster, op)  # idempotent
    assert cluster.nodes["n1"].priority == 2
    with pytest.raises(UsageError):
        fault.apply(cluster, _op("set_priority", "n1", "f2", value=7))


def test_set_priority_heal_without_apply_changes_nothing() -> None:
    cluster = _Managed()
    SetPriority().heal(cluster, _op("set_priority", "n1"))
    assert cluster.log == []


def test_transfer_master_asks_the_target_and_has_nothing_to_heal() -> None:
    cluster = _Managed()
    op = _op("transfer_master", "n2")
    TransferMaster().apply(cluster, op)
    TransferMaster().heal(cluster, op)
    assert cluster.log == [("n2", {"role": "MASTER"})]


def test_operator_faults_need_a_management_api() -> None:
    with pytest.raises(ClusterError, match="management API"):
        DesignatePrimary().apply(object(), _op("designate_primary", "n1"))


class _Killable:
    node_names = ("n1", "n2", "n3")

    def __init__(self) -> None:
        self.roles_now: dict[str, str | None] = dict(ROLES)
        self.calls: list[str] = []

    def roles(self) -> dict[str, str | None]:
        return dict(self.roles_now)

    def kill(self, name: str) -> None:
        self.calls.append(f"kill {name}")
        self.roles_now[name] = None
        self.roles_now["n1"] = "MASTER"

    def restart(self, name: str) -> None:
        self.calls.append(f"restart {name}")


def test_the_nemesis_records_and_heals_the_node_a_selector_resolved_to() -> None:
    cluster = _Killable()
    log: list[dict[str, Any]] = []
    events: list[tuple[str, dict[str, Any]]] = []

    class _Events:
        def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
            events.append((kind, fields))

    nemesis = Nemesis(cluster, log=log.append, events=_Events())
    start = _op("kill", "@master")
    nemesis.apply(start)
    nemesis.apply(FaultOp(at_s=2.0, action="stop", fault="kill", target="@master", id="f1"))
    # the master changed to n1 meanwhile; the heal still restarts the node that was killed
    assert cluster.calls == ["kill n2", "restart n2"]
    assert [(e["action"], e["target"], e["planned_target"]) for e in log] == [
        ("start", "n2", "@master"),
        ("stop", "n2", "@master"),
    ]
    started = next(fields for kind, fields in events if kind == "fault.start")
    assert started["target"] == "n2" and started["selector"] == "@master"
    assert started["roles"] == ROLES
