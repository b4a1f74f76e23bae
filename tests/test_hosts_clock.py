"""A node's clock moved by libfaketime on its host, and put right: Broker-J on a rig host (a
JVM runs under Debian 12's libfaketime with its monotonic clock moved too; a Python node's timed
waits would hang there, so broker_ref's clock faults are refused, see test_hosts_faults.py).
What the node writes in its log is stamped by its own clock: that is what is read."""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hosts_helpers import rig_of
from proton import ConnectionException
from proton.utils import BlockingConnection, ConnectionClosed

from faults.catalog import fault_for
from faults.preflight import preflight
from lab.backends.catalog import make_cluster
from lab.backends.ssh.cluster import SshCluster
from lab.ground.errors import SetupError
from lab.ground.faultops import FaultOp
from lab.ground.spec import Durability, Topology
from lab.pytest_plugin import skip_unless_ci
from lab.targets.brokerj.distribution import ensure_distribution
from lab.targets.brokerj.target import BrokerJTarget

pytestmark = [pytest.mark.hosts, pytest.mark.brokerj, pytest.mark.processes]


class _Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        with self.lock:
            self.seen.append((kind, node, fields))


@pytest.fixture
def brokerj(tmp_path: Path) -> Iterator[tuple[SshCluster, _Events]]:
    if shutil.which("java") is None:
        skip_unless_ci("Broker-J needs a JDK (java is not on PATH)")
    try:
        ensure_distribution()
    except SetupError as exc:
        skip_unless_ci(f"Broker-J could not be fetched: {exc}")
    with rig_of(1, tmp_path / "rig") as (_, _, inventory):
        events = _Events()
        cluster = make_cluster(
            "ssh", BrokerJTarget(), Topology(nodes=1), Durability(), tmp_path / "run",
            events=events, hosts=inventory, clock="monotonic",
        )  # fmt: skip
        assert isinstance(cluster, SshCluster)
        try:
            cluster.start()
            yield cluster, events
        finally:
            cluster.stop()


def _offset(cluster: SshCluster, want: float) -> float:
    """Open connections to n1 until its log stamps one (CON-1001) `want` s from the real time,
    give or take 10 minutes (libfaketime re-reads its file every second or two)."""
    log = cluster.work_dir / "nodes" / "n1" / "broker.log"
    zone = cluster.conns["n1"].run("date +%z").stdout.strip()  # the host's log is local time
    tz = timezone(timedelta(hours=int(zone[:3]), minutes=int(zone[0] + zone[3:])))

    def opened() -> list[str]:
        return [line for line in log.read_text().splitlines() if " CON-1001 : " in line]

    offset = float("nan")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        before = len(opened())
        with contextlib.suppress(ConnectionClosed, ConnectionException):
            BlockingConnection(cluster.client_urls()[0], timeout=10).close()
        now = time.time()
        for _ in range(200):  # the line comes back over SSH as the node writes it
            if len(opened()) > before:
                break
            time.sleep(0.05)
        stamp = datetime.strptime(opened()[-1].split()[0], "%Y-%m-%dT%H:%M:%S.%f")
        offset = stamp.replace(tzinfo=tz).timestamp() - now
        if abs(offset - want) < 600:
            return offset
        time.sleep(0.5)
    return offset


def test_a_jvm_nodes_clock_jumps_an_hour_and_comes_back(
    brokerj: tuple[SshCluster, _Events],
) -> None:
    cluster, events = brokerj
    jump = FaultOp(0.0, "start", "clock_jump", "n1", "t1", {"offset_s": 3600.0, "monotonic": True})
    preflight(cluster, [jump])
    assert abs(_offset(cluster, 0)) < 600
    fault_for("clock_jump").apply(cluster, jump)
    assert abs(_offset(cluster, 3600) - 3600) < 600
    host_clock = float(cluster.conns["n1"].run("date +%s.%N").stdout)
    assert abs(host_clock - time.time()) < 600  # the host's own clock is not touched
    fault_for("clock_jump").heal(cluster, jump)
    assert abs(_offset(cluster, 0)) < 600
    assert cluster.roles() == {"n1": "MASTER"}  # and the node serves on
    sets = [f for k, n, f in events.seen if k == "clock.set" and n == "n1"]
    assert [(s["offset_s"], s["mode"]) for s in sets] == [(3600.0, "monotonic"), (0.0, "monotonic")]
