"""The Docker backend's pure parts, without an engine: labels, addresses, image inputs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from faults.catalog import FAULTS
from lab.backends.docker.base_image import _serves
from lab.backends.docker.images import _digest
from lab.backends.docker.labels import RUN, SESSION, Owner, RunLabels
from lab.backends.docker.networks import Subnet
from lab.backends.docker.node_config import (
    AMQP_PORT,
    MANAGEMENT_PORT,
    REPLICATION_PORT,
    container_node_plan,
)
from lab.ground.nodes import ClusterPlan
from lab.ground.spec import Durability
from lab.targets.broker_ref import BrokerRefTarget


def test_subnet_addresses_are_fixed_per_role() -> None:
    subnet = Subnet("172.30.0.0/16")
    assert subnet.toxiproxy == "172.30.0.2"
    assert [subnet.node(i) for i in range(3)] == ["172.30.0.10", "172.30.0.11", "172.30.0.12"]


def test_this_process_is_a_live_owner_and_a_reused_pid_is_not() -> None:
    me = Owner.this_process()
    assert Owner.parse(me.label()) == me
    assert me.is_alive()
    assert not Owner(me.host, me.pid, "0").is_alive()
    assert Owner("another-host", 1, "0").is_alive()  # not ours to judge
    assert Owner.parse("garbage") is None


def test_run_labels_carry_the_run_the_owner_and_the_session(tmp_path: Path) -> None:
    labels = RunLabels("abc", Owner.this_process(), tmp_path, session="s1")
    node = labels.for_role("node", "n1")
    assert node[RUN] == "abc" and node[SESSION] == "s1" and node["lab.node"] == "n1"
    assert node["lab.owner"] == f"{Owner.this_process().label()}"
    assert node["lab.work_dir"] == str(tmp_path.resolve())


def test_image_digest_changes_with_any_input() -> None:
    one = _digest([("a", b"1"), ("b", b"2")])
    assert one == _digest([("a", b"1"), ("b", b"2")])
    assert one != _digest([("a", b"1"), ("b", b"3")])
    assert one != _digest([("a", b"12"), ("b", b"")])


def test_apt_sources_are_chosen_by_suite() -> None:
    deb822 = "Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\n"
    assert _serves(deb822, "bookworm")
    assert not _serves(deb822, "trixie")
    one_line = "deb [arch=amd64] http://mirror.invalid/debian bookworm main\n"
    assert _serves(one_line, "bookworm")
    assert not _serves("deb http://other.invalid/apt cloud-sdk-bookworm main\n", "bookworm")


def test_a_nodes_container_config_listens_on_all_its_interfaces(tmp_path: Path) -> None:
    names = ("n1", "n2", "n3")
    nodes = tuple(container_node_plan(n, tmp_path / n) for n in names)
    for plan in nodes:
        plan.node_dir.mkdir()
    peers = {"n1": {"n2": "10.0.0.2:11001", "n3": "10.0.0.2:11002"}}
    cluster = ClusterPlan("lab", nodes, Durability(), peer_addresses=peers)
    launch = BrokerRefTarget().container_launch(cluster, nodes[0], {})
    written = json.loads(launch.config)
    assert launch.command[-2:] == ("--config", launch.config_path)
    assert written["host"] == "0.0.0.0"
    assert (written["amqp_port"], written["management_port"]) == (AMQP_PORT, MANAGEMENT_PORT)
    assert written["replication_port"] == REPLICATION_PORT
    assert written["data_dir"] == "/data"
    assert written["peers"] == peers["n1"]
    on_disk = json.loads((tmp_path / "n1" / "config.json").read_text())
    assert on_disk == written


def test_container_faults_are_in_the_catalog() -> None:
    assert {"disk_fill", "disconnect"} <= set(FAULTS)


def test_the_docker_sdk_is_imported_only_by_those_who_ask_for_containers() -> None:
    import subprocess
    import sys

    code = (
        "import lab.backends.catalog, lab.cli.updown, faults.catalog, sys; "
        "print('docker' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert done.stdout.strip() == "False"


def test_the_catalog_makes_a_docker_cluster_without_an_engine(tmp_path: Path) -> None:
    """Made, not started: nothing is asked of the engine yet."""
    from lab.backends.catalog import make_cluster
    from lab.backends.docker.cluster import DockerCluster
    from lab.ground.spec import Topology
    from lab.targets.protocol import NoTarget

    made = make_cluster("docker", NoTarget(), Topology(nodes=1), Durability(), tmp_path)
    assert isinstance(made, DockerCluster)


def test_an_engine_that_refuses_leaves_no_socket_warning() -> None:
    """docker-py leaves its socket open when the engine refuses the first call; collected
    later it would print a ResourceWarning beside the lab's one-line error."""
    # a short folder: a socket path's length is limited
    with tempfile.TemporaryDirectory(prefix="lab-sock-") as short:
        refusing = Path(short) / "refusing.sock"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as bound:
            bound.bind(str(refusing))  # a socket file nobody listens on: connections are refused
        _assert_refused_quietly(refusing)


def _assert_refused_quietly(refusing: Path) -> None:
    code = (
        "import gc\n"
        "from lab.backends.docker.engine import connect\n"
        "from lab.ground.errors import SetupError\n"
        "try:\n"
        "    connect(timeout_s=5)\n"
        "except SetupError as exc:\n"
        "    print('refused' if 'no Docker engine answers' in str(exc) else exc)\n"
        "gc.collect()\n"
    )
    result = subprocess.run(
        [sys.executable, "-W", "default", "-c", code],
        env={**os.environ, "DOCKER_HOST": f"unix://{refusing}"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.stdout.strip() == "refused", result
    assert result.stderr == "", result.stderr
