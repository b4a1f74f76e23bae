"""The faults only hosts have, on a rig of namespaces: a node's clock moved by libfaketime
(its log's timestamps say so) and put right, netem on its interface (its host's queueing
discipline and a connection's handshake say so) and taken off, node links cut by packet
filters and healed; and a fault a backend cannot apply refused before anything starts."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_lab
from hosts_helpers import on_host, rig_of

from faults.catalog import fault_for
from faults.preflight import preflight
from lab.backends.catalog import make_cluster
from lab.backends.ssh.cluster import SshCluster
from lab.backends.ssh.facts import faketime_keeps_monotonic
from lab.ground.errors import UsageError
from lab.ground.faultops import FaultOp
from lab.ground.spec import Durability, Topology
from lab.targets.broker_ref import BrokerRefTarget

pytestmark = [pytest.mark.hosts, pytest.mark.processes]


class Recorded:
    """The events a cluster emits, kept in memory."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        with self.lock:
            self.seen.append((kind, node, fields))

    def log_lines(self, code: str) -> list[str]:
        with self.lock:
            return [f["text"] for k, _, f in self.seen if k == "broker.log" and f["code"] == code]


def _op(fault: str, target: str, **params: Any) -> FaultOp:
    return FaultOp(0.0, "start", fault, target, f"t-{fault}", params)


@pytest.fixture(scope="module")
def group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SshCluster, Recorded]]:
    tmp_path = tmp_path_factory.mktemp("faults")
    with rig_of(2, tmp_path / "rig") as (_, _, inventory):
        events = Recorded()
        cluster = make_cluster(
            "ssh",
            BrokerRefTarget(),
            Topology(nodes=2),
            Durability(),
            tmp_path / "run",
            events=events,
            hosts=inventory,
        )
        assert isinstance(cluster, SshCluster)
        try:
            cluster.start()
            yield cluster, events
        finally:
            cluster.stop()
        assert on_host(inventory, "n1", "find /srv/lab -mindepth 1 | wc -l").strip() == "0"
        assert "lab-hosts" not in on_host(inventory, "n1", "iptables -S")
        assert "netem" not in on_host(inventory, "n1", "tc qdisc show")


def _counted(cluster: SshCluster, node: str, table: str) -> int:
    """Packets the session's netem rules on the node's host have matched so far."""
    out = cluster.conns[node].run(f"iptables -w -t {table} -L -v -n -x").stdout
    return sum(int(line.split()[0]) for line in out.splitlines() if cluster.session.tag in line)


def test_a_nodes_interface_is_shaped_by_netem_and_freed(
    group: tuple[SshCluster, Recorded],
) -> None:
    """tc netem where the host's kernel has it; on a kernel without (this lab's test machine's)
    loss and duplication by packet filter, whose counters show packets lost and copied."""
    cluster, events = group
    host = cluster.host("n1")
    has_netem = cluster._facts()["n1"].has("netem")
    params = (
        {"delay_ms": 400, "loss_pct": 5} if has_netem else {"loss_pct": 30, "duplicate_pct": 30}
    )
    shaped = _op("netem", "n1", **params)
    preflight(cluster, [shaped])
    fault_for("netem").apply(cluster, shaped)
    if has_netem:
        qdiscs = cluster.conns["n1"].run("tc qdisc show").stdout
        assert "netem" in qdiscs and "delay 400ms" in qdiscs and "loss 5%" in qdiscs
        started = time.monotonic()
        socket.create_connection((host.address, cluster.host_ports["n1"][0]), 30).close()
        assert time.monotonic() - started >= 0.35  # its SYN-ACK waited 400 ms
    else:
        deadline = time.monotonic() + 60  # the group's heartbeats cross the interface
        while time.monotonic() < deadline:
            if _counted(cluster, "n1", "filter") and _counted(cluster, "n1", "mangle"):
                break
            time.sleep(0.2)
        assert _counted(cluster, "n1", "filter") > 0  # packets lost
        assert _counted(cluster, "n1", "mangle") > 0  # packets copied
    fault_for("netem").heal(cluster, shaped)  # over SSH, which the fault leaves alone
    assert "netem" not in cluster.conns["n1"].run("tc qdisc show").stdout
    assert cluster.session.tag not in cluster.conns["n1"].run("iptables-save").stdout
    assert [k for k, n, _ in events.seen if n == "n1" and k.startswith("netem")] == [
        "netem.set",
        "netem.clear",
    ]
    if not has_netem:
        delayed = _op("netem", "n1", delay_ms=100)
        with pytest.raises(UsageError, match=r"no netem \(sch_netem\): only .* not delay_ms"):
            preflight(cluster, [delayed])


def test_node_links_are_cut_on_both_hosts_and_healed(group: tuple[SshCluster, Recorded]) -> None:
    cluster, _ = group
    n2 = cluster.host("n2").address
    probe = f"timeout 3 bash -c '</dev/tcp/{n2}/{cluster.host_ports['n2'][2]}' && echo reached"
    assert "reached" in cluster.conns["n1"].run(probe, check=False).stdout
    cut = _op("cut", "n1_to_n2")
    preflight(cluster, [cut])
    fault_for("cut").apply(cluster, cut)
    rules = cluster.conns["n1"].run("iptables -S").stdout
    assert f"-d {n2}/32" in rules and f"-s {n2}/32" in rules and cluster.session.tag in rules
    assert "reached" not in cluster.conns["n1"].run(probe, check=False).stdout
    fault_for("cut").heal(cluster, cut)
    assert cluster.session.tag not in cluster.conns["n2"].run("iptables -S").stdout
    assert "reached" in cluster.conns["n1"].run(probe, check=False).stdout


def test_a_fault_the_backend_cannot_apply_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    incident = tmp_path / "netem.toml"
    incident.write_text(
        'scenario = "incident"\nseed = 1\nbackend = "process"\n[topology]\nnodes = 3\n'
        '[workload]\nduration_s = 6.0\n[[fault]]\nid = "lossy"\nfault = "netem"\n'
        'target = "n1"\nstart_s = 1.0\nend_s = 3.0\nparams = { loss_pct = 10 }\n'
    )
    done = run_lab("run", "--spec", str(incident), cwd=tmp_path)
    assert done.returncode == 2
    assert "needs a cluster on machines of their own (--backend ssh)" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_clock_fault_a_hosts_libfaketime_cannot_apply_is_refused_before_anything_starts(
    group: tuple[SshCluster, Recorded],
) -> None:
    """Debian 12's libfaketime (0.9.10) cannot leave a process's monotonic clock alone, and
    hangs a Python node's timed waits either way: a clock fault on broker_ref is refused."""
    cluster, _ = group
    version = cluster._facts()["n1"].values["faketime_version"]
    jump = _op("clock_jump", "n1", offset_s=30.0, monotonic=True)
    if faketime_keeps_monotonic(version):
        preflight(cluster, [jump])
    else:
        with pytest.raises(UsageError, match=r"Python node's timed waits hang .* 0\.9\.11"):
            preflight(cluster, [jump])
    with pytest.raises(UsageError, match=r"rate is 0\.5 to 2"):
        preflight(cluster, [_op("clock_drift", "n1", rate=3.0)])
