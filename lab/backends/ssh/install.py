"""Putting a run on a host, and taking its results back: the facts asked, the run's folder
made, the node wrapper and the target's shipments (broker_ref and its Python packages,
Broker-J's distribution) copied and unpacked, what the run's faults need and the host lacks
installed with its own apt-get; free ports found; each node's folder fetched at the end."""

from __future__ import annotations

import contextlib
import io
import random
import shlex
import tarfile
from pathlib import Path

from lab.backends.ssh.connection import HostConnection, probe
from lab.backends.ssh.facts import FACTS, HostFacts
from lab.backends.ssh.hosts_file import Host
from lab.backends.ssh.node import RUN_NODE
from lab.targets.on_hosts import RunsOnHosts

__all__ = ["ask_facts", "fetch", "free_ports", "install", "needed_tools"]

_PORTS = "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk 'NR>1 {print $2}'"


def facts_script(host: Host) -> str:
    return FACTS.format(python=shlex.quote(host.python), dir=shlex.quote(host.dir))


def ask_facts(host: Host) -> HostFacts:
    """The host's facts, over a connection of its own (before anything starts)."""
    return HostFacts.parse(host, probe(host, facts_script(host)).stdout)


def needed_tools(clock: bool) -> dict[str, str]:
    """What the run's faults may need on a host (fact -> Debian package)."""
    wanted = {"iptables": "iptables", "tc": "iproute2"}
    if clock:
        wanted["faketime"] = "libfaketime"
    return wanted


def install(
    conn: HostConnection, root: str, target: RunsOnHosts, facts: HostFacts, tools: dict[str, str]
) -> HostFacts | None:
    """Make the run's folder `root` on the host and put there what its node needs; install
    what of `tools` the host lacks (when it lets the lab: root and apt-get). The host's facts
    anew when something was installed, else None."""
    host = conn.host
    dirs = " ".join(shlex.quote(f"{root}/{d}") for d in ("bin", "ship", f"nodes/{host.node}"))
    conn.run(f"umask 077 && mkdir -p {dirs}")
    conn.write(f"{root}/bin/run-node", RUN_NODE.encode(), mode=0o700)
    for name, archive in target.host_shipment().items():
        remote = shlex.quote(f"{root}/ship/{name}.tar.gz")
        into = shlex.quote(f"{root}/ship/{name}")
        conn.put(archive, f"{root}/ship/{name}.tar.gz")
        conn.run(f"mkdir -p {into} && tar -xzf {remote} -C {into} && rm {remote}", timeout_s=600)
    node_dir = shlex.quote(f"{root}/nodes/{host.node}")
    conn.run(f"mkdir -p {node_dir}/data && echo +0.000 > {node_dir}/faketime")
    missing = sorted({pkg for key, pkg in tools.items() if not facts.has(key)})
    if not missing or not (facts.root and facts.has("apt")):
        return None
    conn.run(
        f"{host.privileged}env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "
        f"--no-install-recommends {' '.join(missing)}",
        timeout_s=600,
    )
    return HostFacts.parse(host, conn.run(facts_script(host)).stdout)


def free_ports(conn: HostConnection) -> tuple[int, int, int]:
    """Three ports nothing uses on the host, below the ephemeral range (so a node restarted
    after a kill gets its ports back)."""
    used = set()
    for word in conn.run(_PORTS).stdout.split():
        with contextlib.suppress(ValueError):
            used.add(int(word.rsplit(":", 1)[-1], 16))
    free = [p for p in range(20000, 32000) if p not in used]
    amqp, management, replication = random.Random().sample(free, 3)
    return amqp, management, replication


def fetch(conn: HostConnection, node_dir: str, into: Path) -> None:
    """The node's folder on its host into `into` (its log is there already)."""
    raw = conn.read(f"tar -C {shlex.quote(node_dir)} -cf - --exclude=broker.log .")
    with tarfile.open(fileobj=io.BytesIO(raw)) as archive:
        archive.extractall(into, filter="data")
