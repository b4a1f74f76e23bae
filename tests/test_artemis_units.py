"""Artemis as a target, without a JVM: its settings, the configuration it writes, its state
read through Jolokia, its log, and what it refuses before anything starts."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from lab.ground.cluster_settings import SELF_ACTIVATED
from lab.ground.errors import UsageError
from lab.ground.faultops import FaultOp
from lab.ground.nodes import ClusterPlan, NodePlan, NodeStatus
from lab.ground.spec import Durability, GroupSettings, SideQueue
from lab.targets.artemis.config import CLUSTER_USER, FILE_LOCK_MANAGER, BrokerPlan, etc_files
from lab.targets.artemis.jolokia import BrokerState, state_from_answers
from lab.targets.artemis.rules import check_plan, check_run
from lab.targets.artemis.settings import ArtemisSettings
from lab.targets.artemis.target import ArtemisTarget, named_peers, parse_artemis_line
from lab.targets.protocol import pair_address, traits_of
from scenarios.active_passive_self import SELF_CLUSTER
from scenarios.catalog import SCENARIOS

NS = {"a": "urn:activemq:core"}


def _group(**artemis: str) -> GroupSettings:
    return replace(SELF_CLUSTER, target_context={"artemis": artemis} if artemis else {})


def _plan(tmp_path: Path, primary: bool = True, **artemis: str) -> BrokerPlan:
    group = _group(**artemis)
    return BrokerPlan(
        name="n1" if primary else "n2",
        primary=primary,
        group="lab",
        data_dir=tmp_path / "data",
        etc_dir=tmp_path / "etc",
        bind_host="127.0.0.1",
        amqp_port=5001,
        cluster_port=7001,
        http_port=8001,
        advertised="lab-n1:9001",
        peers={"n2": "lab-n2:9002"},
        cluster_password="secret",
        settings=ArtemisSettings.parse(group.target_context.get("artemis", {})),
        timings=group.active_passive,
        locks_dir=tmp_path / "locks",
        hosts={"lab-n2": "127.78.1.2"},
    )


def _core(plan: BrokerPlan) -> ET.Element:
    core = ET.fromstring(etc_files(plan)["broker.xml"]).find("a:core", NS)
    assert core is not None
    return core


def _text(core: ET.Element, path: str) -> str:
    found = core.find(path, NS)
    assert found is not None, path
    return found.text or ""


def test_the_defaults_are_a_file_lock_with_failback() -> None:
    settings = ArtemisSettings.parse({})
    assert (settings.activation, settings.lock_manager, settings.failback) == (
        "lock-manager",
        "file",
        True,
    )
    assert not settings.quorum


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"activation": "vote"}, "activation"),
        ({"lock-manager": "etcd"}, "lock-manager"),
        ({"lock-manager": "zookeeper"}, "zookeeper"),
        ({"zookeeper": "127.0.0.1:2181"}, "zookeeper"),
        ({"session-ms": "6000"}, "session-ms"),
        ({"lock-manager": "zookeeper", "zookeeper": "host"}, "zookeeper"),
        ({"activation": "quorum-voting", "lock-manager": "file"}, "activation"),
        ({"voters": "3"}, "voters"),
        ({"activation": "quorum-voting", "voters": "9"}, "voters"),
        ({"failback": "yes"}, "failback"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(raw: dict[str, str], named: str) -> None:
    with pytest.raises(UsageError, match=rf"group\.target_context\.artemis\.{named}"):
        ArtemisSettings.parse(raw)


def test_a_primary_with_a_file_lock_and_the_clusters_timings(tmp_path: Path) -> None:
    core = _core(_plan(tmp_path))
    primary = core.find("a:ha-policy/a:replication/a:primary", NS)
    assert primary is not None
    assert _text(primary, "a:manager/a:class-name") == FILE_LOCK_MANAGER
    lock = primary.find("a:manager/a:properties/a:property", NS)
    assert lock is not None and lock.attrib == {
        "key": "locks-folder",
        "value": str(tmp_path / "locks"),
    }
    assert _text(primary, "a:group-name") == "lab"
    # the C++ broker's link heartbeat (1 s in the scenarios) and maintenance interval (0.2 s)
    connection = "a:cluster-connections/a:cluster-connection/"
    assert _text(core, connection + "a:check-period") == "1000"
    assert _text(core, connection + "a:connection-ttl") == "2000"
    assert _text(core, connection + "a:retry-interval") == "200"
    assert _text(core, "a:cluster-user") == CLUSTER_USER
    assert _text(core, "a:cluster-password") == "secret"
    assert _text(core, "a:connectors/a:connector[@name='self']") == "tcp://lab-n1:9001"
    assert _text(core, "a:connectors/a:connector[@name='peer-n2']") == "tcp://lab-n2:9002"


def test_a_broker_alone_has_no_cluster_connection(tmp_path: Path) -> None:
    # The durability benchmark's "primary alone": an empty <static-connectors> made a
    # broker.xml Artemis refused, and the broker never answered.
    alone = replace(_plan(tmp_path), peers={})
    assert _core(alone).find("a:cluster-connections", NS) is None
    assert _core(_plan(tmp_path)).find("a:cluster-connections", NS) is not None


def test_a_backup_fails_back_unless_told_not_to(tmp_path: Path) -> None:
    backup = _core(_plan(tmp_path, primary=False)).find("a:ha-policy/a:replication/a:backup", NS)
    assert backup is not None and _text(backup, "a:allow-failback") == "true"
    plan = _plan(tmp_path, primary=False, failback="false")
    backup = _core(plan).find("a:ha-policy/a:replication/a:backup", NS)
    assert backup is not None and _text(backup, "a:allow-failback") == "false"


def test_quorum_voting_takes_no_lock_manager(tmp_path: Path) -> None:
    plan = _plan(tmp_path, activation="quorum-voting", **{"quorum-vote-wait": "3"})
    primary = _core(plan).find("a:ha-policy/a:replication/a:primary", NS)
    assert primary is not None
    assert primary.find("a:manager", NS) is None
    assert _text(primary, "a:vote-on-replication-failure") == "true"
    assert _text(primary, "a:check-for-active-server") == "true"
    assert _text(primary, "a:quorum-vote-wait") == "3"


def test_zookeeper_is_the_curator_lock_manager(tmp_path: Path) -> None:
    raw = {"lock-manager": "zookeeper", "zookeeper": "127.0.0.1:2181", "session-ms": "6000"}
    manager = _core(_plan(tmp_path, **raw)).find(
        "a:ha-policy/a:replication/a:primary/a:manager", NS
    )
    assert manager is not None
    properties = {
        p.attrib["key"]: p.attrib["value"] for p in manager.iter(f"{{{NS['a']}}}property")
    }
    assert properties == {"connect-string": "127.0.0.1:2181", "session-ms": "6000"}


def test_the_etc_folder_has_its_hosts_and_no_audit_log(tmp_path: Path) -> None:
    files = etc_files(_plan(tmp_path))
    assert files["hosts"] == "127.78.1.2 lab-n2\n"
    assert "logger.audit.level = OFF" in files["log4j2.properties"]
    assert "[n1]" in files["log4j2.properties"]
    assert 'uri="http://127.0.0.1:8001"' in files["bootstrap.xml"]


def test_a_broker_announces_one_name_and_dials_each_peer_through_its_pairs_proxy(
    tmp_path: Path,
) -> None:
    nodes = tuple(
        NodePlan(f"n{i}", 5000 + i, 6000 + i, 7000 + i, tmp_path / f"n{i}", tmp_path / f"n{i}")
        for i in (1, 2, 3)
    )
    port = {"n1": 9001, "n2": 9002, "n3": 9003}
    peers = {
        a.name: {
            b.name: f"{pair_address(i + 1, j + 1)}:{port[b.name]}"
            for j, b in enumerate(nodes)
            if b is not a
        }
        for i, a in enumerate(nodes)
    }
    plan = ClusterPlan("lab", nodes, Durability(), peers, SELF_CLUSTER)
    advertised, dialled, hosts = named_peers(plan, nodes[1])
    assert advertised == "lab-n2:9002"
    assert dialled == {"n1": "lab-n1:9001", "n3": "lab-n3:9003"}
    assert hosts == {"lab-n2": "127.0.0.1", "lab-n1": "127.78.2.1", "lab-n3": "127.78.2.3"}


@pytest.mark.parametrize(
    ("attributes", "role", "status"),
    [
        ({"Active": True, "Backup": False, "ReplicaSync": True}, "MASTER", "active"),
        ({"Active": True, "Backup": False, "ReplicaSync": False}, "MASTER", "recovering"),
        ({"Active": False, "Backup": True, "ReplicaSync": True}, "REPLICA", "ready"),
        ({"Active": False, "Backup": True, "ReplicaSync": False}, "WAITING", "joining"),
    ],
)
def test_a_brokers_state_maps_onto_the_labs_words(
    attributes: dict[str, bool], role: str, status: str
) -> None:
    queues = {
        "status": 200,
        "value": {
            'org.apache.activemq.artemis:address="lab",broker="n1",component=addresses,'
            'queue="lab",routing-type="anycast",subcomponent=queues': {"MessageCount": 7}
        },
    }
    answers = [{"status": 200, "value": {'…broker="n1"': attributes}}, queues]
    state = state_from_answers(answers)
    assert state is not None
    assert (state.role, state.ha_status) == (role, status)
    assert dict(state.queue_depths) == {"lab": 7}


@pytest.mark.parametrize(
    "answers",
    [None, [], [{"status": 404, "error": "no such mbean"}], [{"status": 200, "value": {}}]],
)
def test_a_broker_not_yet_registered_has_no_state(answers: object) -> None:
    assert state_from_answers(answers) is None


def test_a_coded_line_is_a_record_and_the_backups_refusal_is_broker_refs_code() -> None:
    line = (
        "2026-11-26T06:23:16.289 INFO  [n1] [org.apache.activemq.artemis.core.server] "
        "AMQ221007: Server is now active\n"
    )
    record = parse_artemis_line(line)
    assert record is not None
    assert (record.node, record.level, record.code, record.text) == (
        "n1",
        "INFO",
        "AMQ221007",
        "Server is now active",
    )
    refused = parse_artemis_line(
        "org.apache.activemq.artemis.api.core.ActiveMQClusterSecurityException: AMQ229099: "
        "Unable to authenticate cluster user: lab-cluster\n"
    )
    assert refused is not None and refused.code == "REF-2012"
    assert parse_artemis_line("\tat org.apache.activemq.Foo.bar(Foo.java:1)\n") is None
    assert parse_artemis_line(" Apache ActiveMQ Artemis 2.40.0\n") is None


def test_a_broker_that_stopped_says_so_on_its_line_before_its_console_does() -> None:
    """A failback: the backup that served logs that it stopped before its primary activates;
    read as the moment it is no master, the failback shows one master at a time, where the
    console's later answer made the two overlap (lab.judge.metrics)."""
    from lab.judge.metrics import _two_masters

    stopped = parse_artemis_line(
        "2026-11-26T10:41:10.447 INFO  [n2] [org.apache.activemq.artemis.core.server] "
        "AMQ221002: Apache ActiveMQ Artemis Message Broker version 2.40.0 [id] stopped, "
        "uptime 21.148 seconds\n"
    )
    assert stopped is not None and (stopped.took_role, stopped.took_status) == (
        "WAITING",
        "joining",
    )

    def role(ms: int, node: str, role: str) -> dict[str, object]:
        return {"kind": "node.role", "time": ms * 1_000_000, "node": node, "role": role}

    handed_back = [role(0, "n2", "MASTER"), role(447, "n2", "WAITING"), role(814, "n1", "MASTER")]
    assert not _two_masters(handed_back)
    polled_late = [role(0, "n2", "MASTER"), role(814, "n1", "MASTER"), role(888, "n2", "WAITING")]
    assert _two_masters(polled_late)


def _outline(**changes: object) -> ClusterPlan:
    settings = replace(SELF_CLUSTER, **changes)  # type: ignore[arg-type]
    return ClusterPlan.outline(("n1", "n2"), Durability(), settings)


@pytest.mark.parametrize(
    ("plan", "says"),
    [
        (ClusterPlan.outline(("n1", "n2"), Durability(), GroupSettings()), "--mode active-passive"),
        (
            _outline(active_passive=SELF_CLUSTER.active_passive.with_changes(activation="manager")),
            "no cluster manager",
        ),
        (
            _outline(active_passive=SELF_CLUSTER.active_passive.with_changes(ha_replicate="none")),
            "only ha_replicate all",
        ),
        (
            ClusterPlan.outline(
                ("n1", "n2"), Durability("SYNC", "SYNC", "ALL", False), SELF_CLUSTER
            ),
            "durability triplet",
        ),
        (_outline(quorum_override=1), "Java broker's"),
    ],
)
def test_a_group_artemis_cannot_form_is_refused(plan: ClusterPlan, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        check_plan(plan)


def test_what_artemis_cannot_express_is_refused_with_its_reason() -> None:
    traits = traits_of(ArtemisTarget())
    rogue = SCENARIOS["rogue-promote"].spec(1, target=traits)
    with pytest.raises(UsageError, match=r"\(promote\): Artemis has no command"):
        check_run(rogue)
    unreplicated = SCENARIOS["replicate-none"].spec(1, target=traits)
    with pytest.raises(UsageError, match="no per-queue replication"):
        check_run(unreplicated)
    base = SCENARIOS["primary-failure"].spec(1, target=traits)
    check_run(base)
    frozen = FaultOp(at_s=1.0, action="start", fault="pause", target="manager", id="f9")
    with pytest.raises(UsageError, match="no cluster manager"):
        check_run(base.with_schedule((*base.schedule, frozen)))
    side = replace(base.workload, side=SideQueue("q", replicate="none"))
    with pytest.raises(UsageError, match=r"qpid\.replicate"):
        check_run(replace(base, workload=side))


def test_a_target_that_activates_itself_runs_the_scenarios_self_activated_variant() -> None:
    traits = traits_of(ArtemisTarget())
    assert traits.activates_itself and traits.lab_codes == {"REF-2012", "REF-2013"}
    scenario = SCENARIOS["primary-failure"]
    spec = scenario.spec(3, target=traits)
    assert spec.group.active_passive.activation == SELF_ACTIVATED
    assert spec.group.to_json()["active_passive"]["activation"] == SELF_ACTIVATED
    assert scenario.prediction_for(spec) is not scenario.prediction
    assert "no cluster manager" in scenario.prediction_for(spec).text
    plain = scenario.spec(3)  # broker_ref: the lab's cluster manager, spec.json as before
    assert "activation" not in plain.group.to_json()["active_passive"]
    assert scenario.prediction_for(plain) is scenario.prediction
    random = SCENARIOS["random"].in_mode("active-passive").spec(11, target=traits)
    assert not random.workload.virtual_address
    assert all(op.target not in ("manager", "client_vip") for op in random.schedule)


def test_the_group_is_ready_with_one_primary_and_its_backup_in_sync() -> None:
    target = ArtemisTarget()

    def status(name: str, role: str) -> NodeStatus:
        return NodeStatus(name, role)

    master, replica, waiting = (
        status("n1", "MASTER"),
        status("n2", "REPLICA"),
        status("n3", "WAITING"),
    )
    assert target.group_ready({"n1": master}, 1)
    assert target.group_ready({"n1": master, "n2": replica, "n3": waiting}, 3)
    assert not target.group_ready({"n1": master, "n3": waiting}, 3)
    assert not target.group_ready({"n1": master, "n2": replica, "n3": None}, 3)
    assert target.group_ready({"n1": master, "n2": replica}, 3)  # n3 stopped itself
    assert not target.group_ready({"n1": master}, 2)  # its only backup stopped itself
    two = {"n1": master, "n2": status("n2", "MASTER")}
    assert not target.group_ready(two, 2)
    assert BrokerState(True, False, True).role == "MASTER"


def test_a_primary_that_lost_its_lock_is_no_master_from_its_decision_to_stop() -> None:
    """With a ZooKeeper lock manager a primary whose session expired (its clock slowed, or it
    was frozen) decides to stop on an uncoded line; its JVM may end before any "stopped"
    line. Read as the moment it leaves the active role: the backup that activates just after
    is no second master (clients saw the one stop serving before the other began)."""
    from lab.judge.metrics import _two_masters

    line = (
        "2026-11-26T13:50:45.688 ERROR [n2] [org.apache.activemq.artemis.core.server.impl."
        "ReplicationPrimaryActivation] Quorum UNAVAILABLE: async stopping broker.\n"
    )
    stopping = parse_artemis_line(line)
    assert stopping is not None
    assert (stopping.node, stopping.code, stopping.took_role, stopping.took_status) == (
        "n2",
        "LAB-STOPPING",
        "WAITING",
        "joining",
    )
    assert parse_artemis_line(line.replace("Quorum UNAVAILABLE", "Quorum AVAILABLE")) is None

    def at(ms: int, node: str, kind: str, **more: object) -> dict[str, object]:
        return {"kind": kind, "time": ms * 1_000_000, "node": node, **more}

    read = [
        at(0, "n2", "node.role", role="MASTER"),
        at(31_610, "n2", "node.role", role="WAITING"),  # the decision to stop, read now
        at(31_950, "n3", "node.role", role="MASTER"),
        at(32_550, "n2", "node.exit"),
    ]
    assert not _two_masters(read)
    unread = [e for e in read if e["time"] != 31_610 * 1_000_000]  # as before: until its exit
    assert _two_masters(unread)
