"""Broker-J as a target, without a JVM: its configuration, its log, its distribution cache."""

from __future__ import annotations

import io
import json
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from lab.backends.process.cluster import ProcessCluster
from lab.ground.errors import ClusterError, SetupError, UsageError
from lab.ground.events import NoEvents
from lab.ground.nodes import ClusterPlan, NodePlan
from lab.ground.spec import Durability, GroupSettings, Topology
from lab.ground.topology import links_for, split_node_link
from lab.targets.broker_ref import BrokerRefTarget
from lab.targets.brokerj.config import check_durability, initial_config
from lab.targets.brokerj.distribution import ensure_distribution, tarball_in_repository
from lab.targets.brokerj.target import BrokerJTarget, parse_brokerj_line
from lab.targets.management import Credentials

ROLE_OWN = (
    "2026-11-21T18:31:18.383 INFO [n3] [Broker] [grp(/lab)] HA-1010 : Role change reported: "
    "Node : 'n3' (127.0.0.1:25003) : from 'WAITING' to 'MASTER'"
)
ROLE_OTHER = (
    "2026-11-21T18:31:15.230 INFO [n3] [grp(/lab)/vhn(/n3)] [grp(/lab)] HA-1010 : Role change "
    "reported: Node : 'n1' (127.0.0.1:25001) : from 'MASTER' to 'UNREACHABLE'"
)
RECOVERY = (
    "2026-11-21T18:31:18.376 INFO [n3] [Broker] [vh(/lab)/ms(ProvidedBDBMessageStore)] "
    "MST-1006 : Recovery Complete"
)


def _plan(tmp_path: Path, size: int = 3, **settings: object) -> ClusterPlan:
    nodes = tuple(
        NodePlan(f"n{i}", 5000 + i, 6000 + i, 7000 + i, tmp_path / f"n{i}" / "data", tmp_path)
        for i in range(1, size + 1)
    )
    return ClusterPlan("lab", nodes, Durability(), settings=GroupSettings(**settings))  # type: ignore[arg-type]


def test_an_operational_line_gives_its_code_node_and_text() -> None:
    record = parse_brokerj_line(RECOVERY)
    assert record is not None
    assert (record.node, record.level, record.code) == ("n3", "INFO", "MST-1006")
    assert record.text == "Recovery Complete"
    assert record.role_change is None


def test_only_a_nodes_own_role_change_is_its_role() -> None:
    own = parse_brokerj_line(ROLE_OWN)
    other = parse_brokerj_line(ROLE_OTHER)
    assert own is not None and other is not None
    assert own.role_change == ("WAITING", "MASTER")
    assert other.code == "HA-1010"
    assert other.role_change is None  # n3 reporting what it learnt of n1


@pytest.mark.parametrize(
    "line",
    [
        "[Broker] BRK-1004 : Qpid Broker Ready",  # printed before the loggers are configured
        "\tat org.apache.qpid.server.Main.main(Main.java:1)",
        "2026-11-21T18:37:19.680 WARN [n1] Unexpected exception handling frame",
    ],
)
def test_other_lines_are_not_records(line: str) -> None:
    assert parse_brokerj_line(line) is None


def test_the_initial_configuration_forms_one_group(tmp_path: Path) -> None:
    cluster = _plan(tmp_path, priority={"n2": 0}, quorum_override=1)
    address_of = {p.name: f"127.0.0.1:{p.replication_port}" for p in cluster.nodes}
    config = initial_config(
        cluster, cluster.nodes[1], Credentials(), bind_host="127.0.0.1", address_of=address_of
    )
    (node,) = config["virtualhostnodes"]
    assert node["type"] == "BDB_HA"
    assert node["address"] == "127.0.0.1:7002"
    assert (node["helperAddress"], node["helperNodeName"]) == ("127.0.0.1:7001", "n1")
    assert node["permittedNodes"] == ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"]
    assert (node["priority"], node["quorumOverride"], node["designatedPrimary"]) == (0, 1, False)
    virtualhost = json.loads(node["virtualHostInitialConfiguration"])
    # NO_SYNC,NO_SYNC,SIMPLE_MAJORITY with coalescing-sync: 9.x coalesces only under SYNC
    assert virtualhost["localTransactionSynchronizationPolicy"] == "SYNC"
    assert virtualhost["remoteTransactionSynchronizationPolicy"] == "NO_SYNC"
    assert "coalescingSync" not in virtualhost  # read-only in 9.x: it follows from the above
    plugin = config["plugins"][0]
    assert plugin["httpBasicAuthenticationEnabled"] is True
    ports = {p["name"]: p for p in config["ports"]}
    assert ports["AMQP"]["port"] == 5002 and ports["HTTP"]["port"] == 6002
    assert ports["AMQP"]["protocols"] == ["AMQP_1_0"]


@pytest.mark.parametrize(
    ("triplet", "coalescing", "local", "context"),
    [
        ("NO_SYNC,NO_SYNC,SIMPLE_MAJORITY", True, "SYNC", {}),
        ("WRITE_NO_SYNC,SYNC,SIMPLE_MAJORITY", True, "SYNC", {}),
        ("NO_SYNC,NO_SYNC,SIMPLE_MAJORITY", False, "NO_SYNC", {}),
        ("WRITE_NO_SYNC,NO_SYNC,SIMPLE_MAJORITY", False, "WRITE_NO_SYNC", {}),
        (
            "SYNC,NO_SYNC,SIMPLE_MAJORITY",
            False,
            "SYNC",
            {"qpid.bdb.ha.disable_coalescing_committer": "true"},
        ),
    ],
)
def test_coalescing_sync_becomes_the_local_policy_broker_j_coalesces_under(
    triplet: str, coalescing: bool, local: str, context: dict[str, str]
) -> None:
    from lab.targets.brokerj.config import sync_policies

    durability = Durability.parse(triplet, coalescing)
    assert sync_policies(durability) == (local, durability.replica_sync, context)


def test_the_sync_context_reaches_the_node_and_a_scenario_context_still_wins(
    tmp_path: Path,
) -> None:
    nodes = _plan(tmp_path).nodes
    context = {"qpid-broker-j": {"qpid.bdb.ha.disable_coalescing_committer": "false"}}
    for settings, expected in (({}, "true"), ({"target_context": context}, "false")):
        plan = ClusterPlan(
            "lab",
            nodes,
            Durability("SYNC", "NO_SYNC", "SIMPLE_MAJORITY", coalescing_sync=False),
            settings=GroupSettings(**settings),  # type: ignore[arg-type]
        )
        address_of = {p.name: f"127.0.0.1:{p.replication_port}" for p in nodes}
        config = initial_config(
            plan, nodes[0], Credentials(), bind_host="127.0.0.1", address_of=address_of
        )
        (node,) = config["virtualhostnodes"]
        assert node["context"]["qpid.bdb.ha.disable_coalescing_committer"] == expected
        assert node["context"]["je.rep.insufficientReplicasTimeout"] == "5000 ms"


def test_an_acknowledgement_policy_broker_j_does_not_offer_is_refused() -> None:
    check_durability(Durability("NO_SYNC", "NO_SYNC", "SIMPLE_MAJORITY"))
    with pytest.raises(UsageError, match="SIMPLE_MAJORITY"):
        check_durability(Durability("SYNC", "SYNC", "ALL", coalescing_sync=False))


def test_broker_j_nodes_get_client_proxies_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lab.backends.process import cluster as process_cluster
    from lab.backends.process.peer_filter import NOT_ROOT

    names = ("n1", "n2")
    assert [link.name for link in links_for(names, peer_links=False)] == [
        "client_to_n1",
        "client_to_n2",
    ]
    assert split_node_link("n1_to_n2") == ("n1", "n2")
    assert split_node_link("client_to_n1") is None
    monkeypatch.setattr(process_cluster, "peer_filter_refusal", lambda: NOT_ROOT)
    cluster = ProcessCluster(
        Topology(nodes=2), Durability(), BrokerJTarget(), tmp_path, events=NoEvents()
    )
    with pytest.raises(ClusterError, match="link n1_to_n2: qpid-broker-j nodes reach each other"):
        cluster.require_link("n1_to_n2")


def test_a_full_gc_is_refused_for_a_target_that_is_not_a_jvm(tmp_path: Path) -> None:
    cluster = ProcessCluster(Topology(nodes=1), Durability(), BrokerRefTarget(), tmp_path)
    with pytest.raises(ClusterError, match="needs a JVM target"):
        cluster.full_gc("n1")


def _tarball_in_maven(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, members: tuple[str, ...]
) -> Path:
    """A tarball with `members` where Maven would have put Broker-J `version`, in a local
    repository and cache of the test's own."""
    monkeypatch.setenv("MAVEN_REPO_LOCAL", str(tmp_path / "m2"))
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    tarball = tarball_in_repository(version)
    tarball.parent.mkdir(parents=True)
    with tarfile.open(tarball, "w:gz") as archive:
        for name in members:
            data = b"#!/bin/sh\n"
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return tarball


def test_the_distribution_is_unpacked_once_from_mavens_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = "0.0.1-test"
    members = (f"qpid-broker/{version}/bin/qpid-server", f"qpid-broker/{version}/lib/je-7.4.5.jar")
    tarball = _tarball_in_maven(tmp_path, monkeypatch, version, members)
    said: list[str] = []
    dist = ensure_distribution(version, said.append)
    assert dist.home == tmp_path / "cache" / "broker-j" / version / "home"
    assert dist.bdb_je.name == "je-7.4.5.jar"
    assert any("unpacking" in line for line in said)
    tarball.unlink()  # a second call uses the unpacked copy
    assert ensure_distribution(version, said.append) == dist
    assert not list((tmp_path / "cache" / "broker-j").glob(".unpack-*"))


def test_a_tarball_that_is_not_broker_j_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = "0.0.2-test"
    _tarball_in_maven(tmp_path, monkeypatch, version, ())
    with pytest.raises(SetupError, match="not a Broker-J"):
        ensure_distribution(version, lambda _line: None)
    assert list((tmp_path / "cache" / "broker-j").iterdir()) == []


def test_a_schedule_that_needs_node_links_is_refused_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from faults.preflight import preflight
    from lab.backends.docker.cluster import DockerCluster
    from lab.ground.faultops import FaultOp

    partition = FaultOp(
        at_s=1.0,
        action="start",
        fault="partition",
        target="group",
        id="f1",
        params={"sides": "n1|n2"},
    )
    latency = FaultOp(
        at_s=1.0,
        action="start",
        fault="latency",
        target="n1_to_n2",
        id="f2",
        params={"latency_ms": 150},
    )
    from lab.backends.process import cluster as process_cluster

    monkeypatch.setattr(process_cluster, "peer_filter_refusal", lambda: "only as root, say")
    not_root = ProcessCluster(Topology(nodes=2), Durability(), BrokerJTarget(), tmp_path)
    with pytest.raises(UsageError, match="have no proxy: only as root, say"):
        preflight(not_root, [partition])
    monkeypatch.setattr(process_cluster, "peer_filter_refusal", lambda: None)
    as_root = ProcessCluster(Topology(nodes=2), Durability(), BrokerJTarget(), tmp_path)
    preflight(as_root, [partition])  # each JVM at its own address, a packet filter between
    with pytest.raises(UsageError, match="no proxy can slow them"):
        preflight(as_root, [latency])
    left_up = ProcessCluster(
        Topology(nodes=2), Durability(), BrokerJTarget(), tmp_path, detached=True
    )
    with pytest.raises(UsageError, match="not on a cluster `lab up` leaves running"):
        preflight(left_up, [partition])
    in_containers = DockerCluster(Topology(nodes=2), Durability(), BrokerJTarget(), tmp_path)
    preflight(in_containers, [partition])  # a packet filter in the node cuts it
    with pytest.raises(UsageError, match="no proxy can slow them"):
        preflight(in_containers, [latency])
    broker_ref = ProcessCluster(Topology(nodes=2), Durability(), BrokerRefTarget(), tmp_path)
    preflight(broker_ref, [partition, latency])


def test_the_groups_timings_become_je_parameters_with_jes_floor() -> None:
    from lab.targets.brokerj.config import je_timings

    quick = je_timings(GroupSettings(election_timeout_s=0.6, insufficient_replicas_timeout_s=5.0))
    assert quick["je.rep.replicaTimeout"] == quick["je.rep.feederTimeout"] == "2000 ms"
    # an election round waits on a silent peer no longer than a replica waits on its master
    assert quick["je.rep.electionsOpenTimeout"] == quick["je.rep.electionsReadTimeout"] == "2000 ms"
    assert quick["je.rep.insufficientReplicasTimeout"] == "5000 ms"
    slow = je_timings(GroupSettings(election_timeout_s=4.0, rep_stream_timeout_s=1.5))
    assert slow["je.rep.replicaTimeout"] == "12000 ms"
    assert slow["je.rep.repStreamTimeout"] == "1500 ms"


def test_the_node_alone_incidents_differ_only_in_coalescing_sync(tmp_path: Path) -> None:
    """incidents/brokerj-node-alone-killed*.toml: the same run, local policy SYNC (the
    coalescing committer) against NO_SYNC (what the lab gave 9.2.1 before)."""
    from lab.run.incident import load_incident
    from lab.targets.brokerj.config import sync_policies

    root = Path(__file__).resolve().parent.parent / "incidents"
    synced = load_incident(root / "brokerj-node-alone-killed.toml")
    unsynced = load_incident(root / "brokerj-node-alone-killed-no-sync.toml")
    assert synced.target == "qpid-broker-j" and synced.topology.nodes == 1
    assert not synced.workload.consume_during_load  # every acknowledged message waits
    assert replace(unsynced, durability=synced.durability) == synced
    assert sync_policies(synced.durability)[0] == "SYNC"
    assert sync_policies(unsynced.durability)[0] == "NO_SYNC"
