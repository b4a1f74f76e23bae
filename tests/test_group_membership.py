"""The group's membership as operator operations (Broker-J's HA chapter, "Creating a
group", "Node Operations"): spare nodes in the topology, the add_node and remove_node faults,
the schedule checks that refuse nonsense before a run, the `@removed` selector, the targets'
configurations and the scenarios' schedules and predictions. The cluster's side is in
test_group_membership_cluster.py; the runs in scenarios/test_scenarios.py and there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from faults.catalog import FAULTS
from faults.nemesis import Nemesis
from faults.schedule_check import check_schedule
from faults.selectors import resolve_op
from lab.ground.errors import ClusterError, InputError, UsageError
from lab.ground.faultops import TAKES_A_NODE_OUT, FaultOp
from lab.ground.nodes import ClusterPlan, NodePlan
from lab.ground.spec import Durability, GroupSettings, RunSpec, Topology
from lab.judge.expectations import RoleNever, ServiceContinued
from lab.judge.facts import RunFacts
from lab.judge.metrics import Window
from lab.run.incident import load_incident
from lab.targets.broker_ref import node_config
from lab.targets.brokerj.config import initial_config
from lab.targets.management import Credentials
from scenarios.catalog import RUNNABLE, SCENARIOS

NODES = ("n1", "n2", "n3")
NS = 1_000_000_000


def _op(fault: str, target: str, at_s: float, fault_id: str) -> FaultOp:
    return FaultOp(at_s=at_s, action="start", fault=fault, target=target, id=fault_id)


# -- the topology's spares --------------------------------------------------------------------


def test_spares_are_planned_nodes_that_are_not_members() -> None:
    topology = Topology(nodes=3, spares=["n3"])  # type: ignore[arg-type]  # as JSON gives it
    assert topology.spares == ("n3",)
    assert topology.node_names == NODES
    assert topology.members == ("n1", "n2")


@pytest.mark.parametrize(
    ("spares", "said"),
    [
        (("n4",), r"^topology\.spares: no node named 'n4' \(nodes: n1, n2, n3\)$"),
        (("n1",), r"^topology\.spares: n1 founds the group and cannot be a spare$"),
        (("n2", "n2"), r"^topology\.spares: a node is named twice \(n2, n2\)$"),
        ("n3", r"^topology\.spares: must be a list of node names, not 'n3'$"),
        ((3,), r"^topology\.spares: must be a list of node names"),
    ],
)
def test_bad_spares_are_refused_in_one_line(spares: Any, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        Topology(nodes=3, spares=spares)


def test_spec_json_names_spares_only_when_there_are_some() -> None:
    plain = RunSpec("x", 1, topology=Topology(nodes=3))
    assert plain.to_json()["topology"] == {"nodes": 3}  # as before: failure ids unchanged
    grown = RunSpec("x", 1, topology=Topology(nodes=3, spares=("n3",)))
    text = json.dumps(grown.to_json())
    assert json.loads(text)["topology"] == {"nodes": 3, "spares": ["n3"]}
    assert RunSpec.from_json(json.loads(text), Path("spec.json")) == grown


def _incident(tmp_path: Path, body: str, spares: str = '["n3"]', mode: str = "") -> Path:
    path = tmp_path / "incident.toml"
    path.write_text(
        f"seed = 3\n{mode}\n[topology]\nnodes = 3\nspares = {spares}\n"
        "[workload]\nduration_s = 12.0\n" + body,
        encoding="utf-8",
    )
    return path


ADD_N3 = '[[fault]]\nid = "grow"\nfault = "add_node"\ntarget = "n3"\nstart_s = 2.0\n'


def test_an_incident_grows_its_group_by_a_spare(tmp_path: Path) -> None:
    spec = load_incident(_incident(tmp_path, ADD_N3))
    assert spec.topology.spares == ("n3",)
    assert [(op.fault, op.target, op.action) for op in spec.schedule] == [
        ("add_node", "n3", "start")
    ]


@pytest.mark.parametrize(
    ("spares", "body", "mode", "said"),
    [
        ('["n9"]', "", "", r"topology\.spares: no node named 'n9'"),
        ('"n3"', "", "", r"topology\.spares: must be a list of node names"),
        ('["n3"]', ADD_N3.replace('"n3"', '"n2"'), "", r"n2 is not a spare \(spares: n3\)"),
        (
            '["n3"]',
            ADD_N3,
            'mode = "active-passive"',
            r"topology\.spares: spare nodes join a replicated group",
        ),
    ],
)
def test_an_incident_with_nonsense_membership_is_refused_naming_file_and_field(
    tmp_path: Path, spares: str, body: str, mode: str, said: str
) -> None:
    path = _incident(tmp_path, body, spares, mode)
    with pytest.raises(InputError, match=rf"^{path}: .*{said}") as refused:
        load_incident(path)
    assert "\n" not in str(refused.value)


# -- the schedule, checked before anything starts ---------------------------------------------


@pytest.mark.parametrize(
    ("ops", "said"),
    [
        ([_op("add_node", "n2", 1.0, "f1")], r"n2 is not a spare \(spares: n3\) and no remove"),
        (
            [_op("add_node", "n3", 1.0, "f1"), _op("add_node", "n3", 2.0, "f2")],
            r"^fault f2 \(add_node n3 at 2 s\): target: n3 was already added by fault f1$",
        ),
        ([_op("remove_node", "n3", 1.0, "f1")], r"n3 is a spare not yet added \(add_node it"),
        ([_op("kill", "n3", 1.0, "f1")], r"n3 is a spare not yet added: add_node it before kill"),
        ([_op("add_node", "@removed", 1.0, "f1")], r"@removed: no remove_node before it$"),
        ([_op("add_node", "@master", 1.0, "f1")], r"name it, or write @removed$"),
        ([_op("remove_node", "@removed", 1.0, "f1")], r"bad role '@removed'"),
        (
            [_op("remove_node", "n2", 1.0, "f1"), _op("remove_node", "n2", 2.0, "f2")],
            r"n2 was already removed by fault f1$",
        ),
    ],
)
def test_membership_nonsense_is_refused(ops: list[FaultOp], said: str) -> None:
    with pytest.raises(UsageError, match=said):
        check_schedule(ops, NODES, 12.0, spares=("n3",))


def test_membership_that_makes_sense_is_accepted() -> None:
    grow_then_use = [_op("add_node", "n3", 1.0, "f1"), _op("kill", "n3", 5.0, "f2")]
    check_schedule(grow_then_use, NODES, 12.0, spares=("n3",))
    by_name = [_op("remove_node", "n2", 1.0, "f1"), _op("add_node", "n2", 5.0, "f2")]
    check_schedule(by_name, NODES, 12.0)
    by_role = [_op("remove_node", "@replica:1", 1.0, "f1"), _op("add_node", "n2", 5.0, "f2")]
    check_schedule(by_role, NODES, 12.0)  # the role may have been n2
    again = [_op("remove_node", "@replica:1", 1.0, "f1"), _op("add_node", "@removed", 5.0, "f2")]
    check_schedule(again, NODES, 12.0)
    a_link_to_a_spare = [FaultOp(1.0, "start", "cut", "client_to_n3", "f1")]
    check_schedule(a_link_to_a_spare, NODES, 12.0, spares=("n3",))


@pytest.mark.parametrize("fault", ["add_node", "remove_node"])
def test_membership_is_a_replicated_groups(fault: str) -> None:
    with pytest.raises(UsageError, match=rf"{fault} changes a replicated group's membership"):
        check_schedule([_op(fault, "n2", 1.0, "f1")], NODES, 12.0, managed=True)


# -- the faults -------------------------------------------------------------------------------


class _Group:
    """A cluster that records what is done to its membership."""

    node_names = NODES

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.removed: tuple[str, ...] = ()

    def add_node(self, name: str) -> None:
        self.calls.append(f"add {name}")

    def remove_node(self, name: str) -> None:
        self.calls.append(f"remove {name}")
        self.removed = (*self.removed, name)

    def removed_nodes(self) -> tuple[str, ...]:
        return self.removed

    def roles(self) -> dict[str, str | None]:
        return {"n1": "MASTER", "n2": "REPLICA", "n3": "REPLICA"}


def test_adding_and_removing_have_no_heal_and_the_removed_node_is_named_for_adding() -> None:
    cluster = _Group()
    with Nemesis(cluster) as nemesis:
        nemesis.apply(_op("remove_node", "@replica:1", 1.0, "f1"))
        nemesis.apply(_op("add_node", "@removed", 2.0, "f2"))
        assert cluster.calls == ["remove n2", "add n2"]
    assert cluster.calls == ["remove n2", "add n2"]  # healing did nothing more
    assert {"add_node", "remove_node"} <= set(FAULTS)
    assert "remove_node" in TAKES_A_NODE_OUT and "add_node" not in TAKES_A_NODE_OUT


def test_removed_names_nothing_before_a_removal() -> None:
    with pytest.raises(ClusterError, match=r"^fault f2: @removed: no node has been removed$"):
        resolve_op(_Group(), _op("add_node", "@removed", 2.0, "f2"))


@pytest.mark.parametrize(
    ("fault", "needs"),
    [("add_node", "whose group takes new nodes"), ("remove_node", "can be removed from")],
)
def test_a_cluster_without_the_ability_is_refused_before_the_run(fault: str, needs: str) -> None:
    with pytest.raises(ClusterError, match=needs):
        FAULTS[fault].preflight(object(), _op(fault, "n2", 1.0, "f1"))  # type: ignore[attr-defined]


# -- what each target is told -----------------------------------------------------------------


def _plan(spares: tuple[str, ...]) -> ClusterPlan:
    nodes = tuple(
        NodePlan(n, 5000 + i, 6000 + i, 7000 + i, Path(f"/d/{n}"), Path(f"/n/{n}"))
        for i, n in enumerate(NODES)
    )
    peers = {a: {b: f"127.0.0.1:{8000 + j}" for j, b in enumerate(NODES) if b != a} for a in NODES}
    return ClusterPlan("lab", nodes, Durability(), peers, GroupSettings(), spares=spares)


def test_broker_ref_is_told_the_first_members_only_when_there_are_spares() -> None:
    grown = node_config(_plan(("n3",)), _plan(("n3",)).node("n3"), Credentials())
    assert grown["members"] == ["n1", "n2"]
    assert grown["permitted_nodes"] == list(NODES)
    assert set(grown["peers"]) == {"n1", "n2"}  # every node it may ever reach
    plain = node_config(_plan(()), _plan(()).node("n1"), Credentials())
    assert "members" not in plain


def test_a_broker_j_spare_names_the_founder_as_helper_and_is_permitted() -> None:
    plan = _plan(("n3",))
    address_of = {n: f"10.0.0.{i}:7000" for i, n in enumerate(NODES, start=1)}
    config = initial_config(
        plan, plan.node("n3"), Credentials(), bind_host="0", address_of=address_of
    )
    (vhn,) = config["virtualhostnodes"]
    assert (vhn["helperNodeName"], vhn["helperAddress"]) == ("n1", "10.0.0.1:7000")
    assert vhn["permittedNodes"] == list(address_of.values())


# -- the scenarios ----------------------------------------------------------------------------


def test_grow_group_adds_its_spare_a_few_seconds_in() -> None:
    spec = RUNNABLE["grow-group"].spec(5)
    assert spec.topology == Topology(nodes=3, spares=("n3",))
    op, mark = spec.schedule
    assert (op.fault, op.target, op.action) == ("add_node", "n3", "start")
    assert 3.0 <= op.at_s <= 4.0
    assert (mark.action, mark.id) == ("stop", op.id)  # a moment only: nothing to heal
    check_schedule(spec.schedule, spec.topology.node_names, 12.0, spares=spec.topology.spares)


def test_remove_replica_removes_by_role_then_starts_the_same_node_again() -> None:
    spec = RUNNABLE["remove-replica"].spec(5)
    removal, again = (op for op in spec.schedule if op.action == "start")
    assert (removal.fault, removal.target) == ("remove_node", "@replica:1")
    assert (again.fault, again.target) == ("add_node", "@removed")
    assert 4.0 <= again.at_s - removal.at_s <= 5.0
    assert again.at_s < spec.workload.duration_s


def test_each_target_says_in_its_own_words_why_the_removed_node_does_not_serve() -> None:
    scenario = SCENARIOS["remove-replica"]
    codes = {
        target: {getattr(e, "code", None) for e in scenario.prediction_for(spec).expect}
        for target, spec in (
            ("broker_ref", RunSpec("remove-replica", 1)),
            ("qpid-broker-j", RunSpec("remove-replica", 1, target="qpid-broker-j")),
        )
    }
    assert {"HA-1004", "REF-1011"} <= codes["broker_ref"] and "BRK-1019" not in codes["broker_ref"]
    assert {"HA-1004", "BRK-1019"} <= codes["qpid-broker-j"]
    assert "REF-1011" not in codes["qpid-broker-j"]


def _roles(*changes: tuple[float, str]) -> RunFacts:
    events: list[dict[str, Any]] = [
        {"v": 1, "time": 5 * NS, "kind": "fault.start", "node": None, "id": "f2",
         "fault": "add_node", "target": "n2", "roles": {}},
        {"v": 1, "time": 1 * NS, "kind": "node.role", "node": "n2", "role": "REPLICA"},
    ]  # fmt: skip
    for at_s, role in changes:
        events.append(
            {"v": 1, "time": int(at_s * NS), "kind": "node.role", "node": "n2", "role": role}
        )
    events.append(
        {"v": 1, "time": 20 * NS, "kind": "node.status", "node": "n2", "role": "DETACHED"}
    )
    return RunFacts.gather(events, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ((), None),  # REPLICA before the moment does not count
        (((6.0, "WAITING"), (7.0, "DETACHED")), None),
        (((7.5, "REPLICA"), (9.0, "DETACHED")), "n2 (f2) became REPLICA 2.50 s after f2:start"),
    ],
)
def test_role_never_reads_the_nodes_own_role_changes_after_the_moment(
    changes: tuple[tuple[float, str], ...], reason: str | None
) -> None:
    assert (
        RoleNever("f2", ("MASTER", "REPLICA"), after="f2:start").unmet(_roles(*changes)) == reason
    )
    ended = RoleNever("f2", ("DETACHED",), after="f2:start").unmet(_roles())
    assert ended == "n2 (f2) ended as DETACHED"


def test_service_continued_to_the_loads_end_reads_gaps_after_the_faults_end() -> None:
    """f1 heals at 9 s, the load ends at 16 s: a gap at 12–15 s is f1:end's business only
    when asked up to the load's end (a slower target's join comes after a fault's mark)."""
    from test_predictions import _facts as _windowed

    late = _windowed((Window(12.0, 15.0),))
    assert ServiceContinued("f1:start", "f1:end", max_gap_s=2.0).unmet(late) is None
    assert ServiceContinued("f1:start", None, max_gap_s=2.0).unmet(late) == (
        "service was interrupted between f1:start and the load's end (gaps over 2 s: 12.00–15.00 s)"
    )
