"""Peer links of a target whose nodes dial each peer at the one address it announces
(Artemis), on local processes: every proxy into a node listens on one port, each pair at a
loopback address of its own, and a connection to a pair's address reaches the peer through
that pair's proxy only, so cutting one pair leaves the others. Real Toxiproxy, idle nodes."""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path

import pytest

from lab.backends.process.cluster import ProcessCluster
from lab.ground.nodes import NodePlan, NodeStatus
from lab.ground.spec import Durability, Topology
from lab.targets.protocol import NoTarget, pair_address

pytestmark = [pytest.mark.processes]


class ByName(NoTarget):
    """Idle nodes (NoTarget's) that dial their peers by name; n1 says it is the master."""

    dials_peers_by_name = True

    def status(self, node: NodePlan, timeout_s: float = 1.0) -> NodeStatus | None:
        return NodeStatus(node.name, "MASTER" if node.name == "n1" else "REPLICA")


def _serve(port: int, stop: threading.Event) -> threading.Thread:
    """A listener on 127.0.0.1:`port` that answers b"ok" to every connection (a node's
    replication acceptor)."""
    server = socket.create_server(("127.0.0.1", port))
    server.settimeout(0.2)

    def loop() -> None:
        with server:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    conn, _ = server.accept()
                    with conn:
                        conn.sendall(b"ok")

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def _answer(host: str, port: int) -> bytes:
    try:
        with socket.create_connection((host, port), timeout=5) as conn:
            conn.settimeout(5)
            return conn.recv(2)
    except OSError:
        return b""


def test_each_pair_dials_its_own_proxy_on_the_peers_one_port(tmp_path: Path) -> None:
    cluster = ProcessCluster(Topology(nodes=3), Durability(), ByName(), tmp_path)
    stop = threading.Event()
    try:
        cluster.start(timeout_s=60)
        assert cluster.plan is not None
        peers = cluster.plan.peer_addresses
        (port,) = {peers[n]["n1"].rpartition(":")[2] for n in ("n2", "n3")}  # one port into n1
        assert peers["n2"]["n1"] == f"{pair_address(2, 1)}:{port}"
        assert peers["n3"]["n1"] == f"{pair_address(3, 1)}:{port}"
        assert peers["n1"]["n2"] == f"{pair_address(1, 2)}:{peers['n3']['n2'].rpartition(':')[2]}"
        for link, address in (("n2_to_n1", peers["n2"]["n1"]), ("n3_to_n1", peers["n3"]["n1"])):
            assert cluster.proxies[link].listen == address
        _serve(cluster.plan.node("n1").replication_port, stop)
        host2, _, port2 = peers["n2"]["n1"].rpartition(":")
        host3, _, port3 = peers["n3"]["n1"].rpartition(":")
        assert _answer(host2, int(port2)) == b"ok"
        cluster.set_link("n2_to_n1", False)  # one pair cut: the other still reaches n1
        assert _answer(host2, int(port2)) == b""
        assert _answer(host3, int(port3)) == b"ok"
        cluster.set_link("n2_to_n1", True)
        assert _answer(host2, int(port2)) == b"ok"
    finally:
        stop.set()
        cluster.stop()


def _refused(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_proxies_into_a_broker_that_is_not_active_refuse_and_a_cut_outlives_its_return(
    tmp_path: Path,
) -> None:
    cluster = ProcessCluster(Topology(nodes=3), Durability(), ByName(), tmp_path)
    try:
        cluster.start(timeout_s=60)
        assert cluster.plan is not None
        into = {n: cluster.plan.peer_addresses[n]["n1"].rpartition(":") for n in ("n2", "n3")}
        n2_to_n3 = cluster.plan.peer_addresses["n2"]["n3"].rpartition(":")
        cluster.node_status("n3", 1.0)  # the observer's look: n3 runs, a backup (REPLICA)
        assert _refused(n2_to_n3[0], int(n2_to_n3[2]))  # a passive backup takes no connection
        cluster.kill("n1")
        cluster.node_status("n1", 1.0)  # n1 is down
        assert all(_refused(host, int(port)) for host, _, port in into.values())
        cluster.set_link("n2_to_n1", False)  # a fault cuts n2 from n1 while n1 is down
        cluster.restart("n1")
        cluster.node_status("n1", 1.0)
        host3, _, port3 = into["n3"]
        host2, _, port2 = into["n2"]
        assert not _refused(host3, int(port3))  # open again
        assert _refused(host2, int(port2))  # still cut by the fault
        cluster.set_link("n2_to_n1", True)
        assert not _refused(host2, int(port2))
    finally:
        cluster.stop()
