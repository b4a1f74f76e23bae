"""How an Artemis broker is launched on each backend: its JVM's command line, its etc folder
(written where the broker runs, or carried there as one tar its command unpacks), and on local
processes the names it dials its peers by."""

from __future__ import annotations

import io
import shlex
import tarfile
from collections.abc import Mapping

from lab.ground.errors import ClusterError
from lab.ground.nodes import ClusterPlan, NodePlan
from lab.ground.ports import HOST
from lab.targets.artemis.config import BrokerPlan, etc_files

__all__ = [
    "CONTAINER_HOME",
    "CONTAINER_INSTANCE",
    "CONTAINER_LOCKS",
    "ETC_TAR",
    "JVM_OPTIONS",
    "MAIN",
    "java_command",
    "named_peers",
    "tar_of",
    "unpack_and_run",
    "write_etc",
]

MAIN = "org.apache.activemq.artemis.boot.Artemis"
CONTAINER_HOME = "/opt/artemis"
CONTAINER_INSTANCE = "/var/lib/artemis"
CONTAINER_LOCKS = "/locks"  # the run's shared folder: the pair's file lock
ETC_TAR = f"{CONTAINER_INSTANCE}/etc.tar"
PAIR_NAME = "lab-{node}"  # the name a broker announces and its peers dial it by

# Start-up first: with the client compiler alone and the serial collector a broker and its
# web console start in about half the time on two busy cores (10 s instead of 20-30 s at a
# load average of 20); the lab's loads are a few hundred messages a second.
JVM_OPTIONS = ("-Xms64m", "-Xmx320m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


def java_command(home: str, instance: str, etc: str, data: str, hosts: bool) -> list[str]:
    command = [
        "java",
        *JVM_OPTIONS,
        f"-Djava.security.auth.login.config={etc}/login.config",
        "-Dhawtio.realm=activemq",
        "-Dhawtio.offline=true",
        "-Dhawtio.roles=amq",
        "-Dhawtio.rolePrincipalClasses="
        "org.apache.activemq.artemis.spi.core.security.jaas.RolePrincipal",
        f"-Djolokia.policyLocation=file:{etc}/jolokia-access.xml",
        "-Dlog4j2.disableJmx=true",
        f"-Dlog4j2.configurationFile={etc}/log4j2.properties",
        "--add-opens",
        "java.base/jdk.internal.misc=ALL-UNNAMED",
    ]
    if hosts:
        command.append(f"-Djdk.net.hosts.file={etc}/hosts")
    return [
        *command,
        "-classpath",
        f"{home}/lib/artemis-boot.jar",
        f"-Dartemis.home={home}",
        f"-Dartemis.instance={instance}",
        f"-Dartemis.instance.etc={etc}",
        f"-Djava.io.tmpdir={instance}/tmp",
        f"-Ddata.dir={data}",
        MAIN,
        "run",
    ]


def write_etc(plan: BrokerPlan, web: bool = True) -> dict[str, str]:
    files = etc_files(plan, web)
    plan.etc_dir.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (plan.etc_dir / name).write_text(text, encoding="utf-8")
    return files


def tar_of(files: Mapping[str, str]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        for name, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o600
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def named_peers(cluster: ClusterPlan, node: NodePlan) -> tuple[str, dict[str, str], dict[str, str]]:
    """On local processes: what `node` announces (`lab-<node>:<port>`, the port its peers'
    proxies to it listen on), each peer as it dials it, and its hosts file (each peer's name
    to the loopback address of their pair's proxy)."""
    mine = cluster.peer_addresses.get(node.name, {})
    ports = {
        addr.rpartition(":")[2]
        for peers in cluster.peer_addresses.values()
        for peer, addr in peers.items()
        if peer == node.name
    }
    if len(ports) > 1:
        raise ClusterError(f"{node.name}'s peers dial it at different ports: {sorted(ports)}")
    own_port = ports.pop() if ports else str(node.replication_port)
    hosts = {PAIR_NAME.format(node=node.name): HOST}
    peers: dict[str, str] = {}
    for peer, addr in mine.items():
        host, _, port = addr.rpartition(":")
        hosts[PAIR_NAME.format(node=peer)] = host
        peers[peer] = f"{PAIR_NAME.format(node=peer)}:{port}"
    return f"{PAIR_NAME.format(node=node.name)}:{own_port}", peers, hosts


def unpack_and_run(etc: str, instance: str, tar: str, java: list[str]) -> tuple[str, ...]:
    """A shell command that unpacks the etc tar the lab put at `tar` and then becomes the JVM
    (exec: the broker keeps the shell's pid)."""
    script = f"mkdir -p {etc} {instance}/tmp && tar -xf {tar} -C {etc} && exec {shlex.join(java)}"
    return ("sh", "-c", script)
