"""What a cluster's nodes are, as plain values: each node's plan (ports, folders), the
cluster's plan, a node's status as it reports it, and the traits of the target they run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lab.ground.spec import Durability, GroupSettings

__all__ = ["BROKER_REF_TRAITS", "ClusterPlan", "NodePlan", "NodeStatus", "TargetTraits"]


@dataclass(frozen=True)
class NodePlan:
    name: str
    amqp_port: int
    management_port: int
    replication_port: int
    data_dir: Path
    node_dir: Path
    # The host of the replication address the node listens on and advertises to its peers
    # (a JVM node on local processes: an address of its own, lab.backends.process.peer_filter).
    replication_host: str = "127.0.0.1"


@dataclass(frozen=True)
class ClusterPlan:
    group: str
    nodes: tuple[NodePlan, ...]
    durability: Durability
    # node -> peer -> "host:port" the node dials to reach the peer (a Toxiproxy proxy)
    peer_addresses: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    settings: GroupSettings = field(default_factory=GroupSettings)
    # Nodes planned but started only to join the running group (Topology.spares).
    spares: tuple[str, ...] = ()
    # Brokers the target runs beside the group (Artemis's quorum voters): planned like nodes
    # (ports, folders, a proxy on every link with a node or another witness) and started
    # with the group, but never one of its nodes: no client reaches them, no fault names them.
    witnesses: tuple[NodePlan, ...] = ()
    # Processes the lab runs beside the nodes for the run on local processes (RabbitMQ's port
    # mapper), by name: the port each listens on (lab.targets.forming.RunsLocalServices).
    services: Mapping[str, int] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        """Every node planned, spares included (the group's permitted nodes)."""
        return tuple(plan.name for plan in self.nodes)

    @property
    def members(self) -> tuple[str, ...]:
        """The nodes that form the group when it starts: every node but the spares."""
        return tuple(n for n in self.names if n not in self.spares)

    @staticmethod
    def outline(
        names: tuple[str, ...],
        durability: Durability,
        settings: GroupSettings,
        group: str = "lab",
        spares: tuple[str, ...] = (),
    ) -> ClusterPlan:
        """A plan without ports or folders: what a target checks before anything starts."""
        nodes = tuple(NodePlan(n, 0, 0, 0, Path(), Path()) for n in names)
        return ClusterPlan(group, nodes, durability, settings=settings, spares=spares)

    def node(self, name: str) -> NodePlan:
        for plan in (*self.nodes, *self.witnesses):
            if plan.name == name:
                return plan
        raise KeyError(name)

    def is_witness(self, name: str) -> bool:
        return any(plan.name == name for plan in self.witnesses)


@dataclass(frozen=True)
class NodeStatus:
    name: str
    role: str
    last_transaction_id: int | None = None
    queue_depths: Mapping[str, int] = field(default_factory=dict)
    ha_status: str | None = None  # an active-passive broker's: joining, catchup, ready, …


@dataclass(frozen=True)
class TargetTraits:
    """What a run needs to know of its target beyond its name: how much longer than
    broker_ref's (for which the predictions' bounds are set) its elections and its nodes'
    restarts take, and where its known deviations from the documents are declared
    (a TOML file, lab.judge.deviations; None: none declared), and which of broker_ref's
    own codes its logs can show."""

    name: str = "broker_ref"
    election_allowance_s: float = 0.0
    restart_allowance_s: float = 0.0
    deviations: str | None = None
    # broker_ref's own codes (REF-) this target's log lines are read as: events it logs
    # without a code of its own (lab.targets.brokerj.target's LAB_EVENTS)
    lab_codes: frozenset[str] = frozenset()
    # Its active-passive brokers decide themselves which one is active (Artemis): a run
    # of an active-passive scenario leaves the lab's cluster manager out.
    activates_itself: bool = False
    # The defaults of its own settings (group.target_context.<name>): a deviation declared
    # for some settings applies to a run that has them, given or by default.
    settings: tuple[tuple[str, str], ...] = ()
    # The version the nodes run, and the target's default one (None: a target without
    # versions to choose from, as broker_ref, part of the lab).
    version: str | None = None
    default_version: str | None = None
    # What clients put before a queue's name to address it (RabbitMQ's AMQP 1.0 plugin:
    # `/amq/queue/`, an existing queue); empty: the name is the address.
    queue_prefix: str = ""
    # What consumers are given beside their usual options (RabbitMQ: drain over AMQP 0-9-1,
    # `--drain-by-get USER:PASSWORD`, its link drain being unreliable on classic queues).
    consumer_options: tuple[str, ...] = ()

    @property
    def chosen_version(self) -> str | None:
        """The version a run's spec records: None at the target's default."""
        return None if self.version == self.default_version else self.version


BROKER_REF_TRAITS = TargetTraits()  # the target the predictions' bounds are set for
