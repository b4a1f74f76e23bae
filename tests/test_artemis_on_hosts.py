"""Artemis on hosts, without a JVM: what the hosts backend is given (the launch a host runs,
the lab's ZooKeeper as a lab service) and which activation settings it refuses, and where."""

from __future__ import annotations

import io
import shlex
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from lab.ground.errors import UsageError
from lab.ground.nodes import ClusterPlan, NodePlan
from lab.ground.spec import Durability, GroupSettings
from lab.targets.artemis.rules import check_run
from lab.targets.artemis.settings import ArtemisSettings
from lab.targets.artemis.target import ArtemisTarget
from lab.targets.artemis.zookeeper import SERVICE, TICK_MS, zookeeper_command
from lab.targets.on_hosts import HostPlace
from lab.targets.protocol import traits_of
from scenarios.active_passive_self import SELF_CLUSTER
from scenarios.catalog import SCENARIOS

NS = {"a": "urn:activemq:core"}
LAB_ZK = {"lock-manager": "zookeeper", "zookeeper": "lab"}


def _settings(**artemis: str) -> GroupSettings:
    return replace(SELF_CLUSTER, target_context={"artemis": artemis} if artemis else {})


def _cluster(tmp_path: Path, **artemis: str) -> ClusterPlan:
    nodes = tuple(
        NodePlan(
            name=name,
            amqp_port=5672,
            management_port=8161,
            replication_port=61616,
            data_dir=Path(f"/srv/lab/run/nodes/{name}/data"),
            node_dir=tmp_path / name,
        )
        for name in ("n1", "n2")
    )
    return ClusterPlan(
        group="lab", nodes=nodes, durability=Durability(), settings=_settings(**artemis)
    )


def test_the_lab_zookeeper_is_a_setting_only_hosts_take() -> None:
    assert ArtemisSettings.parse(LAB_ZK).zookeeper == "lab"
    with pytest.raises(UsageError, match=r"host:port.* or lab, not 'lab:'"):
        ArtemisSettings.parse({"lock-manager": "zookeeper", "zookeeper": "lab:"})
    traits = traits_of(ArtemisTarget())
    base = SCENARIOS["primary-failure"].spec(1, target=traits)
    on_hosts = replace(base, backend="ssh").with_target_settings(LAB_ZK)
    check_run(on_hosts)
    with pytest.raises(UsageError, match="a file lock cannot span machines"):
        check_run(replace(base, backend="ssh"))
    with pytest.raises(UsageError, match="quorum-voting on hosts"):
        check_run(
            replace(base, backend="ssh").with_target_settings({"activation": "quorum-voting"})
        )
    for backend in ("process", "docker"):
        with pytest.raises(UsageError, match=f"zookeeper=lab on the {backend} backend"):
            check_run(replace(base, backend=backend).with_target_settings(LAB_ZK))


def test_the_lab_zookeeper_is_the_one_lab_service_and_only_when_asked() -> None:
    target = ArtemisTarget()
    (service,) = target.host_services(_settings(**LAB_ZK))
    assert service.name == SERVICE
    ensemble = {"lock-manager": "zookeeper", "zookeeper": "zk1:2181"}
    assert target.host_services(_settings(**ensemble)) == ()
    with pytest.raises(UsageError, match="file lock cannot span"):
        target.host_services(_settings())


def test_a_broker_on_its_host_unpacks_its_etc_and_dials_the_labs_zookeeper_there(
    tmp_path: Path,
) -> None:
    target = ArtemisTarget()
    cluster = _cluster(tmp_path, **LAB_ZK)
    place = HostPlace("/srv/lab/run", services=((SERVICE, "127.0.0.1:40123"),))
    address_of = {"n1": "198.18.3.10:61616", "n2": "198.18.3.11:61616"}
    launch = target.host_launch(cluster, cluster.node("n2"), address_of, place)
    assert launch.config_path == "/srv/lab/run/nodes/n2/etc.tar"
    with tarfile.open(fileobj=io.BytesIO(launch.config)) as archive:
        broker = archive.extractfile("broker.xml")
        assert broker is not None
        text = broker.read().decode()
    core = ET.fromstring(text).find("a:core", NS)
    assert core is not None
    connectors = {c.get("name"): c.text for c in core.iterfind("a:connectors/a:connector", NS)}
    assert connectors == {"self": "tcp://198.18.3.11:61616", "peer-n1": "tcp://198.18.3.10:61616"}
    assert 'value="127.0.0.1:40123"' in text  # the connect-string: the host's end of the forward
    assert (tmp_path / "n2" / "etc" / "broker.xml").read_text() == text  # a copy kept here
    shell, flag, script = launch.command
    assert (shell, flag) == ("sh", "-c")
    assert "tar -xf /srv/lab/run/nodes/n2/etc.tar -C /srv/lab/run/nodes/n2/etc" in script
    java = shlex.split(script.split("&& exec ", 1)[1])
    assert java[0] == "java" and "-Dartemis.home=/srv/lab/run/ship/artemis" in java
    assert "-Dartemis.instance=/srv/lab/run/nodes/n2" in java


def test_a_broker_is_not_launched_with_a_setting_hosts_cannot_carry(tmp_path: Path) -> None:
    target = ArtemisTarget()
    cluster = _cluster(tmp_path)
    with pytest.raises(UsageError, match="file lock cannot span"):
        target.host_launch(cluster, cluster.node("n1"), {}, HostPlace("/srv/lab/run"))
    with pytest.raises(UsageError, match="zookeeper=lab on the process backend"):
        target.command(_cluster(tmp_path, **LAB_ZK), cluster.node("n1"))


def test_the_labs_zookeeper_serves_on_loopback_only_with_the_sessions_the_settings_allow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setattr(
        "lab.targets.artemis.zookeeper.ensure_distribution",
        lambda version: type("D", (), {"home": home})(),
    )
    monkeypatch.setattr(
        "lab.targets.artemis.zookeeper.maven_artifact", lambda c: tmp_path / f"{c}.jar"
    )
    command = zookeeper_command(tmp_path / "zk", 40999)
    config = dict(
        line.split("=", 1) for line in (tmp_path / "zk" / "zoo.cfg").read_text().splitlines()
    )
    assert config["clientPortAddress"] == "127.0.0.1" and config["clientPort"] == "40999"
    assert config["admin.enableServer"] == "false"
    low, high = int(config["minSessionTimeout"]), int(config["maxSessionTimeout"])
    assert (low, high) == (2 * TICK_MS, 240 * TICK_MS)
    session = ArtemisSettings.parse({"lock-manager": "zookeeper", "zookeeper": "lab"}).session_ms
    assert low <= session <= high and low <= 1000 and high >= 120_000
    assert command[-1] == str(tmp_path / "zk" / "zoo.cfg") and f"{home}/lib/*" in command[-3]
