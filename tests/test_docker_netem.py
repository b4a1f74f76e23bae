"""netem in containers: a node's interface on the run's network shaped from the host (tc
netem where the kernel has it; else loss and duplication by packet filter in the node's
namespace, whose counters show packets lost and copied) and freed again."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from faults.catalog import fault_for
from faults.preflight import preflight
from lab.backends.docker.cluster import DockerCluster
from lab.backends.docker.engine import can_install, engine_answers, ensure_engine
from lab.backends.docker.images import build_images
from lab.backends.docker.labels import RUN
from lab.backends.docker.node_netem import TAG, kernel_has_netem
from lab.backends.docker.reaper import leftovers
from lab.ground.errors import ClusterError, UsageError
from lab.ground.faultops import FaultOp
from lab.ground.spec import Durability, Topology
from lab.pytest_plugin import skip_unless_ci
from lab.targets.broker_ref import BrokerRefTarget

pytestmark = pytest.mark.docker

SESSION_LABEL = f"test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{uuid.uuid4().hex[:8]}"


class _Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, dict[str, Any]]] = []

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        self.seen.append((kind, node, fields))


@pytest.fixture
def group(tmp_path: Path) -> Iterator[tuple[DockerCluster, _Events]]:
    if not engine_answers() and not can_install():
        skip_unless_ci("no Docker engine answers, and the lab installs one only as root on Debian")
    engine = ensure_engine(print)
    build_images(print)
    events = _Events()
    started = DockerCluster(
        Topology(nodes=2), Durability(), BrokerRefTarget(), tmp_path,
        events=events, session=SESSION_LABEL, say=print,
    )  # fmt: skip
    try:
        started.start(timeout_s=90.0)
        yield started, events
    finally:
        started.stop()
    assert leftovers(engine, f"{RUN}={started.run_id}").empty


def _counted(cluster: DockerCluster, table: str) -> int:
    pid = cluster.node("n1").pid
    listing = [
        "nsenter",
        "-t",
        str(pid),
        "-n",
        "iptables",
        "-w",
        "-t",
        table,
        "-L",
        "-v",
        "-n",
        "-x",
    ]
    out = subprocess.run(listing, capture_output=True, text=True, check=True).stdout
    return sum(int(line.split()[0]) for line in out.splitlines() if TAG in line)


def test_a_containers_interface_is_shaped_and_freed(group: tuple[DockerCluster, _Events]) -> None:
    cluster, events = group
    netem = kernel_has_netem()
    params = {"delay_ms": 300} if netem else {"loss_pct": 30, "duplicate_pct": 30}
    shaped = FaultOp(0.0, "start", "netem", "n1", "f1", params)
    preflight(cluster, [shaped])
    fault_for("netem").apply(cluster, shaped)
    if netem:
        pid = cluster.node("n1").pid
        show = ["nsenter", "-t", str(pid), "-n", "tc", "qdisc", "show"]
        assert "delay 300ms" in subprocess.run(show, capture_output=True, text=True).stdout
    else:
        deadline = time.monotonic() + 60  # the group's heartbeats cross the interface
        while time.monotonic() < deadline and not (
            _counted(cluster, "filter") and _counted(cluster, "mangle")
        ):
            time.sleep(0.2)
        assert _counted(cluster, "filter") > 0 and _counted(cluster, "mangle") > 0
        with pytest.raises((ClusterError, UsageError), match="no netem"):
            preflight(cluster, [FaultOp(0.0, "start", "netem", "n1", "f2", {"delay_ms": 50})])
    fault_for("netem").heal(cluster, shaped)
    if not netem:
        assert _counted(cluster, "filter") == 0 and _counted(cluster, "mangle") == 0
    assert [k for k, n, _ in events.seen if n == "n1" and k.startswith("netem")] == [
        "netem.set",
        "netem.clear",
    ]
