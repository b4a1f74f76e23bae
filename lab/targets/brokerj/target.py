"""Apache Qpid Broker-J as a target: a JVM per node, one BDB_HA virtual host node each.

Clients reach each node through its Toxiproxy proxy, as for every target. Nodes reach
each other at the replication address they advertise to the group (Berkeley DB JE
records one address per node), so node→node links do not run through per-pair
proxies: on local processes, as root, each JVM gets a loopback address of its own and
a packet filter cuts a pair (lab.backends.process.peer_filter); in containers the Docker
backend cuts them inside the nodes' network namespaces (lab.backends.docker.node_filter).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from lab.ground.errors import SetupError, UsageError
from lab.ground.nodes import ClusterPlan, NodePlan
from lab.ground.ports import HOST
from lab.ground.spec import GroupSettings
from lab.judge.bounds import Timing
from lab.targets.brokerj.config import (
    MODEL_VERSION,
    check_group,
    initial_config,
    je_service_timings,
)
from lab.targets.brokerj.distribution import (
    VERSION,
    Distribution,
    ensure_distribution,
    home_archive,
)
from lab.targets.log_lines import LogRecord, match_log_line
from lab.targets.on_hosts import HostLaunch, HostPlace, LabService
from lab.targets.protocol import ContainerLaunch, RestManagement

__all__ = ["CONTAINER_HOME", "DEVIATIONS", "BrokerJTarget", "parse_brokerj_line"]

CONTAINER_HOME = "/opt/qpid-broker-j"
CONTAINER_CONFIG = "/etc/lab/initial-config.json"
JVM_OPTIONS = ("-Xms64m", "-Xmx384m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseG1GC")
MAIN = "org.apache.qpid.server.Main"
OLDEST_MAJOR = 9  # the oldest major release that reads the configuration model the lab writes
# Where Broker-J does something other than the documents predict (lab.judge.deviations).
DEVIATIONS = Path(__file__).resolve().parent / "deviations.toml"

# 2026-11-21T18:30:47.017 INFO [n1] [Broker] [grp(/lab)] HA-1010 : Role change reported: …
_LINE = re.compile(r"^(\S+) (\w+) \[([^\]\s]+)\] (?:\[[^\]]*\] )*([A-Z]{2,4}-\d{4}) : (.*)$")
_UNCODED = re.compile(r"^(\S+) (\w+) \[([^\]\s]+)\] (.*)$")
# Events Broker-J logs without an operational code, read as broker_ref's code for the
# same event (broker_ref/oplog.py), each by the exact text Broker-J writes.
LAB_EVENTS = {
    # ReplicatedEnvironmentFacade, on JE's InsufficientLogException: a network restore
    "REF-1004": "The log files of this node are too old. Network restore will begin now.",
}


def parse_brokerj_line(line: str) -> LogRecord | None:
    """One line of the console logger's pattern as a record (an uncoded line only when it
    is one of LAB_EVENTS); None for other lines."""
    record = match_log_line(_LINE, line)
    if record is not None:
        return record
    found = _UNCODED.match(line.rstrip("\n"))
    if found is None:
        return None
    time, level, node, text = found.groups()
    for code, said in LAB_EVENTS.items():
        if text == said:
            return LogRecord(time, level, node, code, text)
    return None


def _java_command(classpath: str, home: str, work: str, config: str) -> list[str]:
    return [
        "java",
        *JVM_OPTIONS,
        f"-DQPID_HOME={home}",
        f"-DQPID_WORK={work}",
        "-cp",
        classpath,
        MAIN,
        "--initial-config-path",
        config,
    ]


class BrokerJTarget(RestManagement):
    """`qpid-broker-j`: Broker-J's own binary distribution, unmodified, at `version`
    (`qpid-broker-j@9.1.0`; default VERSION), fetched on first use."""

    name = "qpid-broker-j"
    # JVM start-up and the group's first election: the founder alone, then the others; on a
    # two-core machine at load 50 a JVM takes a minute or more to start.
    ready_timeout_s = 300.0
    # Berkeley DB JE elects in 3-5 s after a master's loss where broker_ref takes about 1 s
    # (lab bench failover --target qpid-broker-j).
    restart_allowance_s = 15.0  # a JVM restarts in 8-17 s in a container on 2 cores
    election_allowance_s = 5.0
    data_disk_mb = 256  # JE writes 10 MB log files and keeps several
    proxied_peer_links = False  # JE records one address per node (see the module's note)
    # The helper node founds the group alone and creates the virtual host from its initial
    # configuration; a replica joining while it does so can fail that first commit
    # (InsufficientReplicasException), and a retry then makes a default virtual host without
    # the configured durability or queue auto-creation.
    founded_by_first_node = True
    deviations_file = DEVIATIONS
    lab_codes = frozenset(LAB_EVENTS)

    default_version = VERSION  # the version the lab's runs use unless told otherwise

    def __init__(self, version: str = VERSION) -> None:
        major = version.split(".")[0]
        if major.isdigit() and int(major) < OLDEST_MAJOR:
            raise UsageError(
                f"qpid-broker-j@{version}: the lab writes Broker-J's configuration model "
                f"{MODEL_VERSION}, which releases before {OLDEST_MAJOR} cannot read "
                "(8.0.6 stops at start-up: no phase upgrader for version 9.0); use 9.1.0 or later"
            )
        self.version = version
        self._distribution: Distribution | None = None

    @property
    def distribution(self) -> Distribution:
        if self._distribution is None:
            self._distribution = ensure_distribution(self.version)
        return self._distribution

    def prepare(self) -> None:
        """Fetch and unpack the distribution now (on first use), not while nodes start."""
        _ = self.distribution

    # -- local processes -----------------------------------------------------------------------

    def check(self, cluster: ClusterPlan) -> None:
        check_group(cluster)

    def command(self, cluster: ClusterPlan, node: NodePlan) -> list[str]:
        check_group(cluster)
        if shutil.which("java") is None:
            raise SetupError("Broker-J needs a Java runtime: install openjdk-17-jdk-headless")
        address_of = {p.name: f"{p.replication_host}:{p.replication_port}" for p in cluster.nodes}
        config = initial_config(
            cluster, node, self.credentials, bind_host=HOST, address_of=address_of
        )
        path = node.node_dir / "initial-config.json"
        path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        node.data_dir.mkdir(parents=True, exist_ok=True)
        dist = self.distribution
        return _java_command(dist.classpath, str(dist.home), str(node.data_dir), str(path))

    # -- containers ----------------------------------------------------------------------------

    def container_launch(
        self, cluster: ClusterPlan, node: NodePlan, address_of: dict[str, str]
    ) -> ContainerLaunch:
        check_group(cluster)
        config = initial_config(
            cluster, node, self.credentials, bind_host="0.0.0.0", address_of=address_of
        )
        text = json.dumps(config, indent=2) + "\n"
        (node.node_dir / "initial-config.json").write_text(text, encoding="utf-8")
        home = CONTAINER_HOME
        classpath = f"{home}/lib/*:{home}/lib/plugins/*:{home}/lib/opt/*"
        return ContainerLaunch(
            config=text.encode(),
            config_path=CONTAINER_CONFIG,
            command=tuple(_java_command(classpath, home, str(node.data_dir), CONTAINER_CONFIG)),
        )

    # -- hosts -------------------------------------------------------------------------------

    def host_shipment(self) -> dict[str, Path]:
        """The distribution, as one archive of its home (made once, in the lab's cache)."""
        return {"broker-j": home_archive(self.distribution)}

    def host_needs(self) -> tuple[str, ...]:
        return ("java",)

    def host_services(self, settings: GroupSettings) -> tuple[LabService, ...]:
        return ()  # its nodes need nothing beside them

    def host_launch(
        self, cluster: ClusterPlan, node: NodePlan, address_of: dict[str, str], place: HostPlace
    ) -> HostLaunch:
        """On every interface of its host, advertising its host's address to the group."""
        check_group(cluster)
        config = initial_config(
            cluster, node, self.credentials, bind_host="0.0.0.0", address_of=address_of
        )
        text = json.dumps(config, indent=2) + "\n"
        (node.node_dir / "initial-config.json").write_text(text, encoding="utf-8")
        home = place.shipped("broker-j")
        classpath = f"{home}/lib/*:{home}/lib/plugins/*:{home}/lib/opt/*"
        path = f"{place.node_dir(node.name)}/initial-config.json"
        command = _java_command(classpath, home, str(node.data_dir), path)
        return HostLaunch(config=text.encode(), config_path=path, command=tuple(command))

    def full_gc_command(self, pid: int | None) -> list[str]:
        """`jcmd <pid> GC.run`; without a pid (in a container), the broker by its main class."""
        return ["jcmd", str(pid) if pid is not None else MAIN, "GC.run"]

    # -- management and logs -------------------------------------------------------------------

    def parse_log_line(self, line: str) -> LogRecord | None:
        return parse_brokerj_line(line)

    def service_timings(self, group: GroupSettings, nodes: int) -> dict[str, Timing]:
        """JE's timeouts as the lab configures them (config.je_service_timings)."""
        return je_service_timings(group, nodes)
