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
    """One node as the lab planned it: what a target's `command()` configures it with.

    Attributes:
        name: `n1`, `n2` …
        amqp_port: the port its clients reach it on (through its proxy).
        management_port: its management API's port (`status()` asks there).
        replication_port: the port its peers reach its replication service on.
        data_dir: its store's folder (kept after the run).
        node_dir: its own folder in the run folder: write its configuration here.
        replication_host: the host of the replication address it listens on and
            advertises to its peers (a JVM node on local processes: an address of its own).
    """

    name: str
    amqp_port: int
    management_port: int
    replication_port: int
    data_dir: Path
    node_dir: Path
    replication_host: str = "127.0.0.1"


@dataclass(frozen=True)
class ClusterPlan:
    """The group a target is asked to form (its `check()` and `command()` read it).

    Attributes:
        group: the group's name.
        nodes: every node's plan, spares included.
        durability: the sync and acknowledgement policies.
        peer_addresses: node → peer → the `host:port` the node dials to reach the peer
            (a Toxiproxy proxy).
        settings: the group's settings (`GroupSettings`: timings, mode, `target_context`).
        spares: nodes planned but started only to join the running group.
        witnesses: brokers the target runs beside the group (Artemis's quorum voters):
            planned and started like nodes, but no client reaches them and no fault names
            them.
        services: processes the lab runs beside the nodes on local processes (RabbitMQ's
            port mapper), by name: the port each listens on
            (lab.targets.forming.RunsLocalServices).
    """

    group: str
    nodes: tuple[NodePlan, ...]
    durability: Durability
    peer_addresses: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    settings: GroupSettings = field(default_factory=GroupSettings)
    spares: tuple[str, ...] = ()
    witnesses: tuple[NodePlan, ...] = ()
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
    """A node's answer to `status()`.

    Parameters:
        name: the node's name.
        role: its role: `MASTER`, `REPLICA`, `WAITING`, `UNREACHABLE`, `DETACHED` …
        last_transaction_id: the last transaction it holds, when it says (the judge
            compares them around a kill).
        queue_depths: messages in each queue, when it says.
        ha_status: an active-passive broker's status: `joining`, `catchup`, `ready`,
            `recovering`, `active`.
    """

    name: str
    role: str
    last_transaction_id: int | None = None
    queue_depths: Mapping[str, int] = field(default_factory=dict)
    ha_status: str | None = None


@dataclass(frozen=True)
class TargetTraits:
    """What a run needs to know of its target beyond starting it (`RunFacts.target`).

    Attributes:
        name: the target's name.
        election_allowance_s: how much longer than broker_ref's (for which the
            predictions' bounds are set) its elections take.
        restart_allowance_s: how much longer its nodes' restarts take.
        deviations: the TOML file its known deviations from the documents are declared in
            (lab.judge.deviations); None: none declared.
        lab_codes: broker_ref's own codes (REF-) its log lines are read as: events it logs
            without a code of its own.
        activates_itself: its active-passive brokers decide themselves which one is active
            (Artemis): the lab's cluster manager stays out of its runs.
        settings: the defaults of its own settings (`group.target_context.<name>`): a
            deviation declared for some settings applies to a run that has them.
        version: the version its nodes run (None: a target without versions).
        default_version: the version it runs when none is named.
        queue_prefix: what clients put before a queue's name to address it (RabbitMQ's
            AMQP 1.0 plugin: `/amq/queue/`, an existing queue); empty: the name is the
            address.
        consumer_options: what consumers are given beside their usual options (RabbitMQ:
            drain over AMQP 0-9-1, `--drain-by-get USER:PASSWORD`, its link drain being
            unreliable on classic queues).
        timeouts: its own failure detection's timeouts, by the names of a replicated
            group's (`heartbeat`, `election timeout`, `election x2`, `lease`, `replica
            timeout`), in seconds, at its default settings: the guided generator's fault
            windows are drawn shorter and longer than these instead of the group's
            (RabbitMQ: Erlang's net_ticktime, after which a silent peer node is down);
            empty: the group's settings are its own.
    """

    name: str = "broker_ref"
    election_allowance_s: float = 0.0
    restart_allowance_s: float = 0.0
    deviations: str | None = None
    lab_codes: frozenset[str] = frozenset()
    activates_itself: bool = False
    settings: tuple[tuple[str, str], ...] = ()
    version: str | None = None
    default_version: str | None = None
    queue_prefix: str = ""
    consumer_options: tuple[str, ...] = ()
    timeouts: tuple[tuple[str, float], ...] = ()

    @property
    def chosen_version(self) -> str | None:
        """The version a run's spec records: None at the target's default."""
        return None if self.version == self.default_version else self.version


BROKER_REF_TRAITS = TargetTraits()  # the target the predictions' bounds are set for
