"""Apache ActiveMQ Artemis as a target: a JVM per broker, a primary replicating its journal to
a backup (Artemis's replication HA policy), in active-passive mode only.

The first node is the primary, every other a backup of the same group; Artemis decides by
itself which broker is active (a lock manager, or a quorum vote of other primaries), so the
lab's cluster manager stays out of its runs and the cluster only watches (lab.manager.observer).

Every broker→broker connection runs through its pair's Toxiproxy proxy: on local processes a
broker announces a name (`lab-n1:<port>`), and each broker's JVM resolves its peers' names
through a hosts file of its own to the proxy of that pair; in containers a broker announces an
address on Toxiproxy where nothing listens, and each peer's network namespace sends what it
dials there to the pair's proxy (lab.backends.docker.node_redirect). Clients reach each broker
through its client proxy, as for every target. The broker's state is read over Jolokia
(lab.targets.artemis.jolokia); two of its log lines say when it took a role.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from lab.ground.errors import ClusterError, SetupError
from lab.ground.nodes import ClusterPlan, NodePlan, NodeStatus
from lab.ground.ports import HOST
from lab.ground.spec import GroupSettings, RunSpec
from lab.targets.artemis.config import BrokerPlan, etc_files
from lab.targets.artemis.distribution import VERSION, Distribution, ensure_distribution
from lab.targets.artemis.jolokia import JolokiaClient
from lab.targets.artemis.launch import (
    CONTAINER_HOME,
    CONTAINER_INSTANCE,
    CONTAINER_LOCKS,
    ETC_TAR,
    MAIN,
    java_command,
    named_peers,
    tar_of,
    unpack_and_run,
    write_etc,
)
from lab.targets.artemis.rules import (
    check_off_hosts,
    check_on_hosts,
    check_plan,
    check_run,
    settings_of,
)
from lab.targets.artemis.settings import DEFAULTS, ArtemisSettings
from lab.targets.artemis.zookeeper import SERVICE, lab_zookeeper
from lab.targets.log_lines import LogRecord, match_log_line
from lab.targets.management import Credentials
from lab.targets.maven import home_archive
from lab.targets.on_hosts import HostLaunch, HostPlace, LabService
from lab.targets.protocol import ContainerLaunch

__all__ = [
    "CONTAINER_HOME",
    "DEVIATIONS",
    "MAIN",
    "ArtemisTarget",
    "named_peers",
    "parse_artemis_line",
]

DEVIATIONS = Path(__file__).resolve().parent / "deviations.toml"

# 2026-11-26T06:23:16.289 INFO  [n1] [org.apache.activemq.artemis.core.server] AMQ221007: Server …
_LINE = re.compile(r"^(\S+) (\w+)\s+\[([^\]\s]+)\] \[[^\]]*\] (AMQ\d{6}): (.*)$")


# Events Artemis logs that broker_ref logs too, read as broker_ref's code for the same event
# (broker_ref/oplog.py), each by the exact words Artemis writes. A backup refused by its
# primary's cluster credentials logs the refusal on the line of the exception it stops on;
# its primary logs nothing (REF-2013, a primary's "Authentication failed", is never seen).
LAB_EVENTS = {
    "REF-2012": re.compile(r"^\S*ActiveMQClusterSecurityException: (AMQ229099: .*)$"),
}
LAB_CODES = frozenset({"REF-2012", "REF-2013"})
# Lines that are their broker taking a role (and an HA status), at the moment it does: a
# broker's web console (its Jolokia) may answer only seconds later, after a failback is over.
TAKEN: dict[str, tuple[str, str | None]] = {
    "AMQ221007": ("MASTER", None),  # Server is now active
    # Message Broker … stopped: no longer active from this line on (a failback's backup
    # stops here, before its primary activates; the console says so only later)
    "AMQ221002": ("WAITING", "joining"),
    "AMQ221024": ("REPLICA", "ready"),  # Backup server … is synchronized with primary server
}


# An uncoded line that is its broker leaving the active role at that moment: a primary whose
# lock manager no longer grants it the lock (its ZooKeeper session expired while it was
# frozen, or its clock jumped) decides to stop and says so; its "stopped" (AMQ221002) comes
# only after the stop is over, and its JVM may end first. The lab names the line STOPPING.
_STOPPING_LINE = re.compile(
    r"^(\S+) (\w+)\s+\[([^\]\s]+)\] \[[^\]]*\] (Quorum UNAVAILABLE: async stopping broker\.?)$"
)
STOPPING = "LAB-STOPPING"


def parse_artemis_line(line: str) -> LogRecord | None:
    """A console line with an Artemis code (AMQ221007 …) as a record, or one of LAB_EVENTS
    read as broker_ref's code, or a primary's decision to stop (STOPPING); None for other
    lines."""
    stopping = _STOPPING_LINE.match(line.rstrip("\n"))
    if stopping is not None:
        time, level, node, text = stopping.groups()
        return LogRecord(time, level, node, STOPPING, text, "WAITING", "joining")
    record = match_log_line(_LINE, line)
    if record is not None:
        taken = TAKEN.get(record.code)
        return (
            record if taken is None else replace(record, took_role=taken[0], took_status=taken[1])
        )
    for code, pattern in LAB_EVENTS.items():
        found = pattern.match(line.rstrip("\n"))
        if found is not None:
            return LogRecord("", "ERROR", "", code, found.group(1))
    return None


class ArtemisTarget:
    """`artemis`: Artemis's own binary distribution, unmodified; its configuration written
    by the lab (lab.targets.artemis.config)."""

    name = "artemis"
    ready_timeout_s = 300.0  # JVMs, web consoles, a backup's first copy: 90 s at a load of 50
    # A backup activates 1-2 s after it finds its primary gone (it loads its journal and
    # opens its acceptors) at a load average of 20 on two cores, 7-10.4 s at 40-50 (the
    # machine these allowances were set on, shared); clients then reconnect.
    election_allowance_s = 12.0
    # A JVM and its web console start in 8-10 s on two cores at a load average of 20, and
    # then load the journal before serving; at a load average of 45-50 a restarted primary
    # took 22 s to look for its backup (and failback needs a copy of the journal after it).
    restart_allowance_s = 45.0
    data_disk_mb = 256
    proxied_peer_links = True  # each pair's proxy, reached by name (see the module's note)
    founded_by_first_node = True  # the primary first; the backups pair with it
    deviations_file = DEVIATIONS
    lab_codes = LAB_CODES
    activates_itself = True
    dials_peers_by_name = True
    setting_defaults = DEFAULTS
    credentials = Credentials()
    default_version = VERSION  # the version the lab's runs use unless told otherwise

    def __init__(self, version: str = VERSION) -> None:
        self.version = version
        self._distribution: Distribution | None = None

    @property
    def distribution(self) -> Distribution:
        if self._distribution is None:
            self._distribution = ensure_distribution(self.version)
        return self._distribution

    def prepare(self) -> None:
        """Fetch and unpack the distribution now (on first use), not while brokers start."""
        _ = self.distribution

    def check(self, cluster: ClusterPlan) -> None:
        check_plan(cluster)

    def check_run(self, spec: RunSpec) -> None:
        """Refuse, before anything starts, what Artemis cannot express (a UsageError)."""
        check_run(spec)

    def group_ready(self, statuses: Mapping[str, NodeStatus | None], brokers: int) -> bool:
        """Every running broker answers, one is active and, in a cluster of more than one,
        one backup is in sync with it (a primary replicates to one backup; the others wait
        to pair, and one that stopped itself is not waited for)."""
        roles = [s.role if s is not None else None for s in statuses.values()]
        if roles.count("MASTER") != 1 or None in roles:
            return False
        return brokers == 1 or "REPLICA" in roles

    # -- local processes -----------------------------------------------------------------------

    def witnesses(self, settings: GroupSettings) -> tuple[str, ...]:
        """Quorum voting: the voters, `voters` primary/backup pairs beside the group
        (v1 primary and v2 its backup, v3 and v4 …); none with a lock manager."""
        if not settings.is_active_passive:
            return ()
        found = settings_of(settings)
        return tuple(f"v{i}" for i in range(1, 2 * found.voters + 1)) if found.quorum else ()

    def _plan(
        self,
        cluster: ClusterPlan,
        node: NodePlan,
        settings: ArtemisSettings | None = None,
        **where: object,
    ) -> BrokerPlan:
        settings = settings or settings_of(cluster.settings)
        timings = cluster.settings.active_passive
        password = timings.password_of(node.name) if timings.ha_auth else timings.ha_password
        primary, group = node.name == cluster.members[0], cluster.group
        if cluster.is_witness(node.name):  # v1 primary, v2 its backup, …: a pair each
            number = int(node.name[1:])
            primary, group = number % 2 == 1, f"{cluster.group}-voters-{(number + 1) // 2}"
            password = timings.ha_password
        return BrokerPlan(
            name=node.name,
            primary=primary,
            group=group,
            cluster_password=password,
            settings=settings,
            timings=timings,
            management_user=self.credentials.user,
            management_password=self.credentials.password,
            **where,  # type: ignore[arg-type]
        )

    def command(self, cluster: ClusterPlan, node: NodePlan) -> list[str]:
        check_plan(cluster)
        check_off_hosts(settings_of(cluster.settings), "process")
        if shutil.which("java") is None:
            raise SetupError("Artemis needs a Java runtime: install openjdk-17-jdk-headless")
        advertised, peers, hosts = named_peers(cluster, node)
        locks = node.node_dir.parent.parent / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        plan = self._plan(
            cluster,
            node,
            data_dir=node.data_dir,
            etc_dir=node.node_dir / "etc",
            bind_host=HOST,
            amqp_port=node.amqp_port,
            cluster_port=node.replication_port,
            http_port=node.management_port,
            advertised=advertised,
            peers=peers,
            locks_dir=locks,
            hosts=hosts,
        )
        write_etc(plan, web=not cluster.is_witness(node.name))
        node.data_dir.mkdir(parents=True, exist_ok=True)
        (node.node_dir / "tmp").mkdir(exist_ok=True)
        home = str(self.distribution.home)
        return java_command(home, str(node.node_dir), str(plan.etc_dir), str(node.data_dir), True)

    # -- containers ----------------------------------------------------------------------------

    def container_launch(
        self, cluster: ClusterPlan, node: NodePlan, address_of: dict[str, str]
    ) -> ContainerLaunch:
        """The broker announces the address `address_of` gives it, and dials its peers at
        theirs (the Docker backend sends each to the pair's proxy); its etc folder goes in as
        one tar the command unpacks (a copy is kept in the run folder); the file lock's folder
        is the run's shared one."""
        check_plan(cluster)
        check_off_hosts(settings_of(cluster.settings), "docker")
        etc = f"{CONTAINER_INSTANCE}/etc"
        plan = self._plan(
            cluster,
            node,
            data_dir=node.data_dir,
            etc_dir=Path(etc),
            bind_host="0.0.0.0",
            amqp_port=node.amqp_port,
            cluster_port=node.replication_port,
            http_port=node.management_port,
            advertised=address_of[node.name],
            peers={p: a for p, a in address_of.items() if p != node.name},
            locks_dir=Path(CONTAINER_LOCKS),
        )
        files = etc_files(plan, web=not cluster.is_witness(node.name))
        kept = node.node_dir / "etc"
        kept.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (kept / name).write_text(text, encoding="utf-8")
        java = java_command(CONTAINER_HOME, CONTAINER_INSTANCE, etc, str(node.data_dir), False)
        command = unpack_and_run(etc, CONTAINER_INSTANCE, ETC_TAR, java)
        return ContainerLaunch(tar_of(files), ETC_TAR, command, CONTAINER_LOCKS)

    # -- hosts ---------------------------------------------------------------------------------

    def host_shipment(self) -> dict[str, Path]:
        """The distribution, as one archive of its home (made once, in the lab's cache)."""
        dist = self.distribution
        return {"artemis": home_archive(dist.home, f"artemis-archive-{dist.version}")}

    def host_needs(self) -> tuple[str, ...]:
        return ("java",)

    def host_services(self, settings: GroupSettings) -> tuple[LabService, ...]:
        """The lab's ZooKeeper with `zookeeper=lab`; a file lock or quorum voting refused."""
        found = settings_of(settings)
        check_on_hosts(found)
        return (lab_zookeeper(self.version),) if found.zookeeper == "lab" else ()

    def host_launch(
        self, cluster: ClusterPlan, node: NodePlan, address_of: dict[str, str], place: HostPlace
    ) -> HostLaunch:
        """On every interface of its host, announcing its host's address and dialling its
        peers at theirs (directly: the hosts backend cuts links with packet filters); its etc
        folder goes in as one tar the command unpacks (a copy is kept in the run folder)."""
        check_plan(cluster)
        settings = settings_of(cluster.settings)
        check_on_hosts(settings)
        if settings.zookeeper == "lab":
            settings = replace(settings, zookeeper=place.service(SERVICE))
        home, instance = place.shipped("artemis"), place.node_dir(node.name)
        etc = f"{instance}/etc"
        plan = self._plan(
            cluster,
            node,
            settings,
            data_dir=node.data_dir,
            etc_dir=Path(etc),
            bind_host="0.0.0.0",
            amqp_port=node.amqp_port,
            cluster_port=node.replication_port,
            http_port=node.management_port,
            advertised=address_of[node.name],
            peers={p: a for p, a in address_of.items() if p != node.name},
        )
        files = etc_files(plan, web=True)
        kept = node.node_dir / "etc"
        kept.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (kept / name).write_text(text, encoding="utf-8")
        java = java_command(home, instance, etc, str(node.data_dir), False)
        tar = f"{instance}/etc.tar"
        return HostLaunch(tar_of(files), tar, unpack_and_run(etc, instance, tar, java))

    def full_gc_command(self, pid: int | None) -> list[str]:
        return ["jcmd", str(pid) if pid is not None else MAIN, "GC.run"]

    # -- management and logs -------------------------------------------------------------------

    def jolokia(self, node: NodePlan, timeout_s: float = 5.0) -> JolokiaClient:
        return JolokiaClient(
            f"http://{HOST}:{node.management_port}", node.name, self.credentials, timeout_s
        )

    def status(self, node: NodePlan, timeout_s: float = 1.0) -> NodeStatus | None:
        try:
            state = self.jolokia(node, timeout_s).state()
        except ClusterError:
            return None
        if state is None:
            return None
        return NodeStatus(
            name=node.name,
            role=state.role,
            queue_depths=dict(state.queue_depths),
            ha_status=state.ha_status,
        )

    def parse_log_line(self, line: str) -> LogRecord | None:
        return parse_artemis_line(line)
