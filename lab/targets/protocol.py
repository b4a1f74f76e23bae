"""Targets: what runs as a node (broker_ref, later real brokers).

A target turns a node's plan into a command line and its configuration, reads a
node's status over its management API, and parses its operational log. It knows
nothing about how the node is run (that is the backend's part).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from lab.ground.errors import ClusterError
from lab.ground.nodes import ClusterPlan, NodePlan, NodeStatus, TargetTraits
from lab.ground.ports import HOST
from lab.ground.spec import GroupSettings, RunSpec
from lab.judge.bounds import Timing
from lab.targets.log_lines import LogRecord
from lab.targets.management import Credentials, ManagementClient

__all__ = [
    "ActivatesItself",
    "ChecksRuns",
    "ContainerLaunch",
    "DeclaresDeviations",
    "DialsPeersByName",
    "HasWitnesses",
    "JvmTarget",
    "ManagedTarget",
    "NoTarget",
    "RestManagement",
    "ServiceTimings",
    "Target",
    "Versioned",
    "missing_members",
    "pair_address",
    "run_command",
    "traits_of",
    "witnesses_of",
]


@dataclass(frozen=True)
class ContainerLaunch:
    """How a node starts in its container (a target's `container_launch()`).

    Parameters:
        config: the node's configuration file's content.
        config_path: where it is copied inside the container.
        command: the command line that starts the node there.
        shared_dir: where the run's shared folder is mounted when its nodes need one (a
            file lock they share); None: no shared folder.
    """

    config: bytes
    config_path: str
    command: tuple[str, ...]
    shared_dir: str | None = None


class Target(Protocol):
    """What runs as a node: how the lab starts one and asks it for its role. Everything else
    (proxies, faults, clients, history, checker, verdict) is the lab's.

    Attributes:
        name: the target's name, as `--target` and its entry point say it.
        ready_timeout_s: how long a group may take to elect its first master.
        data_disk_mb: the size of a node's data disk (containers; a full-disk fault).
        restart_allowance_s: how much longer than broker_ref's a node's restart takes:
            added to a scenario's load and to bounds on the service's return after one.
        proxied_peer_links: whether the nodes dial their peers at the addresses
            `ClusterPlan.peer_addresses` gives (a proxy on every node→node link, so links
            between nodes can be cut and slowed), or at the peers' own addresses.
        election_allowance_s: how much longer than broker_ref's an election takes:
            added to the scenarios' bounds on the service's return.
        founded_by_first_node: whether the first node starts alone and the others once it
            is master; otherwise all start together and elect one.
    """

    name: str
    ready_timeout_s: float
    data_disk_mb: int
    restart_allowance_s: float
    proxied_peer_links: bool
    election_allowance_s: float
    founded_by_first_node: bool

    def prepare(self) -> None:
        """Fetch or check what the nodes need (once, before any starts); idempotent."""
        ...

    def check(self, cluster: ClusterPlan) -> None:
        """Refuse a group this target cannot form (a UsageError naming why), before anything
        starts; `cluster` may be an outline without ports."""
        ...

    def command(self, cluster: ClusterPlan, node: NodePlan) -> list[str]:
        """Write the node's configuration and return the command line that starts it."""
        ...

    def container_launch(
        self, cluster: ClusterPlan, node: NodePlan, address_of: dict[str, str]
    ) -> ContainerLaunch:
        """The node's configuration and command in a container; `node` is the container's
        view (fixed ports, data on /data) and `address_of` maps each node to the
        host:port of its replication service on the run's network."""
        ...

    def status(self, node: NodePlan, timeout_s: float = 1.0) -> NodeStatus | None:
        """The node's role and counters from its management API; None when it does not answer."""
        ...

    def parse_log_line(self, line: str) -> LogRecord | None:
        """One operational-log line as a record with its code, or None."""
        ...


def missing_members(target: object) -> list[str]:
    """The members of `Target` an object lacks (for a target from outside the lab)."""
    members = set(Target.__annotations__) | {
        k for k, v in vars(Target).items() if callable(v) and not k.startswith("_")
    }
    return sorted(m for m in members if not hasattr(target, m))


class NoTarget:
    """A target of nothing (Jepsen's `noop`): each node is an idle process that never answers
    and writes no log, so a backend's planning and life cycle can be composed and tested
    without a broker."""

    name = "none"
    ready_timeout_s = 1.0
    data_disk_mb = 16
    restart_allowance_s = 0.0
    proxied_peer_links = True
    election_allowance_s = 0.0
    founded_by_first_node = False

    def prepare(self) -> None:
        return None

    def check(self, cluster: ClusterPlan) -> None:
        return None

    def command(self, cluster: ClusterPlan, node: NodePlan) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(3600)"]

    def container_launch(
        self, cluster: ClusterPlan, node: NodePlan, address_of: dict[str, str]
    ) -> ContainerLaunch:
        return ContainerLaunch(b"{}", "/etc/lab/none.json", ("sleep", "3600"))

    def status(self, node: NodePlan, timeout_s: float = 1.0) -> NodeStatus | None:
        return None

    def parse_log_line(self, line: str) -> LogRecord | None:
        return None


@runtime_checkable
class JvmTarget(Protocol):
    """A target whose nodes are JVMs: a full garbage collection can be asked of them."""

    def full_gc_command(self, pid: int | None) -> list[str]:
        """The command that runs a full GC in the node's JVM (`pid` None: inside its
        container, where the broker is found by its main class)."""
        ...


@runtime_checkable
class ManagedTarget(Protocol):
    """A target whose nodes have a Broker-J-style management API (lab.targets.management)."""

    def management(self, node: NodePlan) -> ManagementClient:
        """A client for the node's management API, with the credentials the node was given."""
        ...


class RestManagement:
    """`management` and `status` for a target whose nodes answer Broker-J's REST API
    (`/api/latest/virtualhostnode/<node>`) on 127.0.0.1 with basic authentication."""

    credentials = Credentials()

    def management(self, node: NodePlan, timeout_s: float = 5.0) -> ManagementClient:
        """A client of the node's management API, with the target's `credentials`."""
        return ManagementClient(
            f"http://{HOST}:{node.management_port}", node.name, self.credentials, timeout_s
        )

    def status(self, node: NodePlan, timeout_s: float = 1.0) -> NodeStatus | None:
        """The node's role, last transaction id, queue depths and HA status from its
        virtual host node's attributes; None when it does not answer."""
        try:
            body = self.management(node, timeout_s).node_attributes()
        except ClusterError:  # no answer, or an answer that is not a success
            return None
        if not body:
            return None
        queues = body.get("queues") or {}  # broker_ref's; Broker-J reports none here
        return NodeStatus(
            name=node.name,
            role=str(body.get("role", "UNKNOWN")),
            last_transaction_id=body.get("lastKnownReplicationTransactionId"),
            queue_depths={q: int(v.get("depth", 0)) for q, v in queues.items()},
            ha_status=body.get("haStatus"),
        )


def run_command(command: list[str], timeout_s: float = 30.0) -> str:
    """Run a command beside a node (jcmd, …); its output, or a ClusterError saying why not."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClusterError(f"{' '.join(command)}: {exc}") from exc
    if done.returncode != 0:
        raise ClusterError(f"{' '.join(command)}: {(done.stderr or done.stdout).strip()}")
    return done.stdout.strip()


@runtime_checkable
class DeclaresDeviations(Protocol):
    """A target with known deviations from the documents, declared in a TOML file
    (lab.judge.deviations) in its own folder."""

    @property
    def deviations_file(self) -> Path: ...


@runtime_checkable
class ReadsLabCodes(Protocol):
    """A target whose log parser reads some uncoded lines as broker_ref's codes for the
    same event (so one prediction names both)."""

    @property
    def lab_codes(self) -> frozenset[str]: ...


@runtime_checkable
class ServiceTimings(Protocol):
    """A target whose group's timeouts follow a model of its own: how long its group waits
    on a silent node (`silence`), an election (`election`), and one a designated primary
    wins alone (`primary`), from the group's settings (lab.judge.bounds)."""

    def service_timings(self, group: GroupSettings, nodes: int) -> dict[str, Timing]: ...


@runtime_checkable
class ActivatesItself(Protocol):
    """A target whose active-passive brokers decide themselves which one is active (Artemis:
    a lock manager or a quorum vote). Its runs leave the lab's cluster manager out; the
    cluster watches the brokers instead (lab.manager.observer)."""

    activates_itself: bool

    def group_ready(self, statuses: Mapping[str, NodeStatus | None], brokers: int) -> bool:
        """Whether the statuses of the brokers that run make a cluster of `brokers` ready to
        serve (the target's own rule, in place of lab.backends.base.group_ready; a broker
        that stopped itself is not among them)."""
        ...


@runtime_checkable
class DialsPeersByName(Protocol):
    """A target whose nodes dial each peer at the one address that peer announces to the
    group (Artemis's connectors), so no per-pair address can be handed to the dialling node.
    The process backend gives every proxy into a node the same port and each pair's proxy a
    loopback address of its own (`pair_address`), which the target names in the node's own
    resolver; the Docker backend sends what a node dials at a peer's address, from inside the
    node's network namespace, to the pair's proxy."""

    dials_peers_by_name: bool


@runtime_checkable
class HasWitnesses(Protocol):
    """A target that runs brokers beside the group for the group's sake (Artemis's quorum
    voters): the backends plan and start them with the nodes (ClusterPlan.witnesses) and
    stop them with the cluster; they are no node of the run."""

    def witnesses(self, settings: GroupSettings) -> tuple[str, ...]:
        """The witnesses' names for a group with these settings (none: an empty tuple)."""
        ...


def witnesses_of(target: Target, settings: GroupSettings) -> tuple[str, ...]:
    return target.witnesses(settings) if isinstance(target, HasWitnesses) else ()


def pair_address(source: int, dest: int) -> str:
    """The loopback address of the proxy on the link from node number `source` to node number
    `dest` (1-based) on local processes, for a target that dials peers by name: all of
    127.0.0.0/8 is the host's loopback, so it needs no set-up."""
    return f"127.78.{source}.{dest}"


@runtime_checkable
class ChecksRuns(Protocol):
    """A target that refuses some runs by more than their group: a fault or a workload it
    cannot express."""

    def check_run(self, spec: RunSpec) -> None:
        """A UsageError naming why, before anything starts."""
        ...


@runtime_checkable
class Versioned(Protocol):
    """A target whose version is chosen (`--target NAME@VERSION`): its factory takes a
    `version=` keyword, and its objects say the version they run (`version`, fetched on
    first use) and the one it runs when none is named (`default_version`)."""

    @property
    def version(self) -> str: ...

    @property
    def default_version(self) -> str: ...


def traits_of(target: Target) -> TargetTraits:
    """What a run needs to know of the target besides how to start it (lab.ground.nodes)."""
    declared = target.deviations_file if isinstance(target, DeclaresDeviations) else None
    version, default = (
        (target.version, target.default_version) if isinstance(target, Versioned) else (None, None)
    )
    return TargetTraits(
        target.name,
        target.election_allowance_s,
        target.restart_allowance_s,
        None if declared is None else str(declared),
        target.lab_codes if isinstance(target, ReadsLabCodes) else frozenset(),
        isinstance(target, ActivatesItself) and target.activates_itself,
        tuple(sorted(getattr(target, "setting_defaults", {}).items())),
        version=version,
        default_version=default,
        queue_prefix=str(getattr(target, "queue_prefix", "")),
        consumer_options=tuple(getattr(target, "consumer_options", ())),
        timeouts=tuple(getattr(target, "timeouts", ())),
    )
