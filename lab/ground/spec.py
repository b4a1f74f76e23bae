"""The run spec: frozen data that says everything needed to run a scenario again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from lab import __version__
from lab.ground.cluster_settings import (
    ACTIVE_PASSIVE,
    MODES,
    REPLICATE_LEVELS,
    REPLICATED_GROUP,
    ActivePassiveSettings,
    Mode,
)
from lab.ground.errors import InputError, UsageError
from lab.ground.faultops import FaultOp, canonical, ops_from_json
from lab.ground.spec_words import parse_seed, version_or_none

__all__ = [
    "BACKENDS",
    "TARGETS",
    "Durability",
    "GroupSettings",
    "RunSpec",
    "Topology",
    "Workload",
    "timeouts_from_json",
]

# The lab's own backends and targets. Targets are also added by installed packages (entry
# points): the registry that knows them all is lab.targets.catalog.
BACKENDS = ("process", "docker", "ssh")
TARGETS = ("broker_ref", "qpid-broker-j", "artemis", "rabbitmq")
SPEC_VERSION = 1

SyncPolicy = Literal["SYNC", "WRITE_NO_SYNC", "NO_SYNC"]
AckPolicy = Literal["ALL", "SIMPLE_MAJORITY", "NONE"]
SYNC_POLICIES: tuple[SyncPolicy, ...] = ("SYNC", "WRITE_NO_SYNC", "NO_SYNC")
ACK_POLICIES: tuple[AckPolicy, ...] = ("ALL", "SIMPLE_MAJORITY", "NONE")


@dataclass(frozen=True)
class Topology:
    """How many nodes; each node name is n1, n2, …

    Parameters:
        nodes: how many nodes the group has (n1 … nN).
        spares: nodes planned from the start (ports, folders, proxies, the group's
            permitted nodes) but started only by an `add_node` operation, to join the
            running group (the seeds' "adding nodes to an existing group"). n1 founds the
            group and is never a spare.
    """

    nodes: int = 1
    spares: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        raw: object = self.spares
        if not isinstance(raw, list | tuple) or not all(isinstance(n, str) for n in raw):
            raise UsageError(f"topology.spares: must be a list of node names, not {raw!r}")
        spares = tuple(raw)
        object.__setattr__(self, "spares", spares)
        names = self.node_names
        for name in spares:
            if name not in names:
                raise UsageError(
                    f"topology.spares: no node named {name!r} (nodes: {', '.join(names)})"
                )
        if len(set(spares)) != len(spares):
            raise UsageError(f"topology.spares: a node is named twice ({', '.join(spares)})")
        if names and names[0] in spares:  # so at least one node is no spare
            raise UsageError(f"topology.spares: {names[0]} founds the group and cannot be a spare")

    @property
    def node_names(self) -> tuple[str, ...]:
        """Every node planned, spares included."""
        return tuple(f"n{i}" for i in range(1, self.nodes + 1))

    @property
    def members(self) -> tuple[str, ...]:
        """The nodes that form the group when it starts: every node but the spares."""
        return tuple(n for n in self.node_names if n not in self.spares)

    def to_json(self) -> dict[str, Any]:
        """`spares` only when there are some, so spec.json stays as it was for other runs
        (and the failure database's ids with it)."""
        out: dict[str, Any] = {"nodes": self.nodes}
        if self.spares:
            out["spares"] = list(self.spares)
        return out


@dataclass(frozen=True)
class Durability:
    """The durability triplet of the seeds, plus coalescing-sync (Broker-J's names).

    Parameters:
        master_sync: how the master writes a transaction before it commits: `SYNC` (to
            disk), `WRITE_NO_SYNC` (to the operating system) or `NO_SYNC`.
        replica_sync: the same for a replica before it acknowledges.
        ack_policy: which replicas must acknowledge a commit: `ALL`, `SIMPLE_MAJORITY`
            or `NONE`.
        coalescing_sync: the master batches its syncs (not with `master_sync="SYNC"`).
    """

    master_sync: SyncPolicy = "NO_SYNC"
    replica_sync: SyncPolicy = "NO_SYNC"
    ack_policy: AckPolicy = "SIMPLE_MAJORITY"
    coalescing_sync: bool = True

    def __post_init__(self) -> None:
        if self.master_sync not in SYNC_POLICIES or self.replica_sync not in SYNC_POLICIES:
            raise UsageError(
                f"bad durability {self.triplet}: sync policies are {', '.join(SYNC_POLICIES)}"
            )
        if self.ack_policy not in ACK_POLICIES:
            raise UsageError(
                f"bad durability {self.triplet}: ack policies are {', '.join(ACK_POLICIES)}"
            )
        if self.master_sync == "SYNC" and self.coalescing_sync:
            # The seeds: SYNC on the master with coalescing-sync "cannot be used".
            raise UsageError(
                f"durability {self.triplet} with coalescing-sync cannot be used "
                "(master sync policy SYNC needs --no-coalescing)"
            )

    @property
    def triplet(self) -> str:
        return f"{self.master_sync},{self.replica_sync},{self.ack_policy}"

    @staticmethod
    def parse(triplet: str, coalescing_sync: bool = True) -> Durability:
        """`MASTER_SYNC,REPLICA_SYNC,ACK_POLICY` as the seeds write it."""
        parts = [part.strip().upper() for part in triplet.split(",")]
        if len(parts) != 3:
            raise UsageError(
                f"bad durability {triplet!r}: give <master sync>,<replica sync>,<ack policy>, "
                "e.g. NO_SYNC,NO_SYNC,SIMPLE_MAJORITY"
            )
        return Durability(parts[0], parts[1], parts[2], coalescing_sync)  # type: ignore[arg-type]


@dataclass(frozen=True)
class GroupSettings:
    """The HA group's node attributes and timings (the seeds' names in brackets).

    Parameters:
        priority: a node's election priority, 0..3 (Never, Normal, High, Highest);
            unlisted nodes are Normal.
        designated_primary: the nodes set designated primary (groups of two only).
        quorum_override: the group's quorum override, quorumOverride (0: a majority).
        heartbeat_interval_s: how often a master sends its heartbeat.
        election_timeout_s: how long a replica waits without a heartbeat before it
            calls an election.
        insufficient_replicas_timeout_s: how long a commit waits for its replicas
            (je.rep.insufficientReplicasTimeout).
        rep_stream_timeout_s: how long a master keeps the log a missing replica needs
            (je.rep.repStreamTimeout).
        mode: how the group comes to have a master: `replicated-group` (the Java
            broker's: its nodes elect one) or `active-passive` (the C++ broker's: a
            cluster manager promotes one).
        active_passive: an active-passive cluster's settings.
        target_context: a target's name to settings its nodes take as they are, for
            situations a target's defaults hide (Broker-J: context variables of the
            virtual host node, such as JE's `je.log.fileMax`); a target reads only its own.
    """

    priority: Mapping[str, int] = field(default_factory=dict)
    designated_primary: tuple[str, ...] = ()
    quorum_override: int = 0
    heartbeat_interval_s: float = 0.1
    election_timeout_s: float = 0.6
    insufficient_replicas_timeout_s: float = 5.0
    rep_stream_timeout_s: float = 3600.0
    mode: Mode = REPLICATED_GROUP
    active_passive: ActivePassiveSettings = field(default_factory=ActivePassiveSettings)
    target_context: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UsageError(f"unknown mode {self.mode!r} (known: {', '.join(MODES)})")

    @property
    def is_active_passive(self) -> bool:
        return self.mode == ACTIVE_PASSIVE

    def priority_of(self, node: str) -> int:
        return int(self.priority.get(node, 1))

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["priority"] = dict(self.priority)
        out["designated_primary"] = list(self.designated_primary)
        out["active_passive"] = self.active_passive.to_json()
        if self.target_context:
            out["target_context"] = {t: dict(c) for t, c in self.target_context.items()}
        else:
            del out["target_context"]  # (absent: a run without one keeps its spec as it was)
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> GroupSettings:
        fields = dict(raw)
        fields["priority"] = {str(k): int(v) for k, v in dict(fields.get("priority", {})).items()}
        fields["designated_primary"] = tuple(str(n) for n in fields.get("designated_primary", ()))
        fields["active_passive"] = ActivePassiveSettings.from_json(
            dict(fields.get("active_passive") or {})
        )
        fields["target_context"] = {
            str(t): {str(k): str(v) for k, v in dict(c).items()}
            for t, c in dict(fields.get("target_context") or {}).items()
        }
        return GroupSettings(**fields)


@dataclass(frozen=True)
class SideQueue:
    """A second queue beside the workload's own, with one producer and one consumer of its
    own (the last of each): declared with its own replication level (`qpid.replicate`), or
    sent non-durable messages."""

    queue: str
    replicate: str | None = None
    durable: bool = True

    def __post_init__(self) -> None:
        if self.replicate is not None and self.replicate not in REPLICATE_LEVELS:
            raise UsageError(f"side queue replicate {self.replicate!r}: one of {REPLICATE_LEVELS}")


@dataclass(frozen=True)
class Workload:
    """The client workload: producers and consumers on one queue (and maybe a side queue).

    Parameters:
        producers: how many producer processes (p1, p2 …).
        consumers: how many consumer processes (c1, c2 …).
        rate: messages a second each producer sends (0: no limit).
        size: each message's body, in bytes.
        window: how many sends a producer may have unacknowledged at once.
        duration_s: how long the load lasts, in seconds (the schedule's times count from
            its start).
        queue: the queue's name.
        drain_timeout_s: how long the consumers may take to drain the queue at the end.
        consume_during_load: False: consumers start only when the load is over, and
            drain (messages wait in the queue, so a broker that drops acknowledged ones
            cannot hide it behind fast consumers).
        spread_producers: producer p<i> tries node n<i> first, so clients reach
            different nodes when more than one will take them.
        virtual_address: clients know only the cluster's virtual address (an
            active-passive cluster's manager points it at the primary), not every node's.
        heartbeat_s: the clients' AMQP idle timeout (0: none).
        side: a second queue beside this one (`SideQueue`), or None.
    """

    producers: int = 1
    consumers: int = 1
    rate: float = 200.0
    size: int = 100
    window: int = 100
    duration_s: float = 12.0
    queue: str = "lab"
    drain_timeout_s: float = 30.0
    consume_during_load: bool = True
    spread_producers: bool = False
    virtual_address: bool = False
    heartbeat_s: float = 2.0
    side: SideQueue | None = None

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> Workload:
        fields = dict(raw)
        side = fields.get("side")
        fields["side"] = None if side is None else SideQueue(**side)
        return Workload(**fields)


@dataclass(frozen=True)
class RunSpec:
    """Everything a run is made of, as `spec.json` holds it (docs/run-folder.md).

    Attributes:
        scenario: the scenario's name (`incident` for an incident file's).
        seed: the seed of the run's one random generator.
        target: the target's name (`broker_ref`, `qpid-broker-j`, `artemis`, yours).
        backend: `process`, `docker` or `ssh`.
        topology: the nodes.
        durability: the sync and acknowledgement policies.
        workload: the clients.
        group: the HA group's settings and design.
        schedule: the fault operations, as planned for this seed.
        lab_version: the lab's version that made it.
        git_revision: the lab checkout's revision, when it runs from one.
        target_version: the target's version when it is not its default (None: the
            default).
        target_timeouts: the target's own timeouts the schedule's windows were measured
            against (TargetTraits.timeouts; empty: the group's).
    """

    scenario: str
    seed: int
    target: str = "broker_ref"
    backend: str = "process"
    topology: Topology = field(default_factory=Topology)
    durability: Durability = field(default_factory=Durability)
    workload: Workload = field(default_factory=Workload)
    group: GroupSettings = field(default_factory=GroupSettings)
    schedule: tuple[FaultOp, ...] = ()
    lab_version: str = __version__
    git_revision: str | None = None
    # The target's version when it is not the target's default (None: the default; absent
    # from spec.json then, so a spec and its failure database id stay as they were).
    target_version: str | None = None
    # A target's own timeouts (name, seconds) when it has them (absent from spec.json
    # otherwise, so a broker_ref spec and its failure database id stay as they were).
    target_timeouts: tuple[tuple[str, float], ...] = ()

    @property
    def target_ref(self) -> str:
        """The target as the command line names it: `qpid-broker-j@9.1.0`, or its name."""
        return (
            self.target if self.target_version is None else f"{self.target}@{self.target_version}"
        )

    def with_schedule(self, schedule: tuple[FaultOp, ...]) -> RunSpec:
        """This spec with `schedule`, in its canonical form (as spec.json holds it)."""
        return replace(self, schedule=canonical(schedule))

    def with_target_settings(self, settings: Mapping[str, str]) -> RunSpec:
        """This spec with `settings` added to its target's `group.target_context` (a user's
        `--target-setting KEY=VALUE`, over the scenario's own)."""
        if not settings:
            return self
        context = {t: dict(c) for t, c in self.group.target_context.items()}
        context[self.target] = {**context.get(self.target, {}), **settings}
        return replace(self, group=replace(self.group, target_context=context))

    def to_json(self) -> dict[str, Any]:
        return {
            "v": SPEC_VERSION,
            "scenario": self.scenario,
            "seed": self.seed,
            "target": self.target,
            "backend": self.backend,
            "topology": self.topology.to_json(),
            "durability": asdict(self.durability),
            "workload": asdict(self.workload),
            "group": self.group.to_json(),
            "schedule": [op.to_json() for op in self.schedule],
            "lab_version": self.lab_version,
            "git_revision": self.git_revision,
            **({} if self.target_version is None else {"target_version": self.target_version}),
            **({"target_timeouts": dict(self.target_timeouts)} if self.target_timeouts else {}),
        }

    @staticmethod
    def from_json(raw: Mapping[str, Any], source: Path) -> RunSpec:
        try:
            return RunSpec(
                scenario=str(raw["scenario"]),
                seed=parse_seed(str(raw["seed"])),
                target=str(raw.get("target", "broker_ref")),
                backend=str(raw.get("backend", "process")),
                topology=Topology(**raw.get("topology", {})),
                durability=Durability(**raw.get("durability", {})),
                workload=Workload.from_json(raw.get("workload", {})),
                group=GroupSettings.from_json(raw.get("group", {})),
                schedule=ops_from_json(list(raw.get("schedule", []))),
                lab_version=str(raw.get("lab_version", __version__)),
                git_revision=raw.get("git_revision"),
                target_version=version_or_none(raw.get("target_version")),
                target_timeouts=timeouts_from_json(raw.get("target_timeouts", {})),
            )
        except (KeyError, TypeError, ValueError, UsageError) as exc:
            raise InputError(f"{source}: not a valid run spec: {exc}") from exc


def timeouts_from_json(raw: object) -> tuple[tuple[str, float], ...]:
    """spec.json's `target_timeouts` (`{"name": seconds}`) as RunSpec holds them."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"target_timeouts: a table of names and seconds, not {raw!r}")
    timeouts = []
    for name, seconds in raw.items():
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
            raise ValueError(f"target_timeouts.{name}: seconds above 0, not {seconds!r}")
        timeouts.append((str(name), float(seconds)))
    return tuple(timeouts)
