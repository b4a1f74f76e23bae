"""What an Artemis cluster can be, checked before anything starts: each refusal is one line
that says why (a UsageError, exit status 2)."""

from __future__ import annotations

from lab.ground.cluster_settings import SELF_ACTIVATED
from lab.ground.errors import UsageError
from lab.ground.nodes import ClusterPlan
from lab.ground.spec import Durability, GroupSettings, RunSpec
from lab.targets.artemis.settings import TARGET, ArtemisSettings

__all__ = ["check_off_hosts", "check_on_hosts", "check_plan", "check_run", "settings_of"]

MANAGER = "manager"


def settings_of(group: GroupSettings) -> ArtemisSettings:
    return ArtemisSettings.parse(group.target_context.get(TARGET, {}))


def check_plan(cluster: ClusterPlan) -> None:
    """Refuse a group Artemis cannot form."""
    settings = cluster.settings
    if not settings.is_active_passive:
        raise UsageError(
            "Apache ActiveMQ Artemis has no replicated group of the Java broker's kind: its HA "
            "is a primary replicating its journal to a backup (the C++ broker's active-passive "
            "design); run it with --mode active-passive"
        )
    ap = settings.active_passive
    if ap.activation != SELF_ACTIVATED:
        raise UsageError(
            "Artemis decides by itself which broker is active (a lock manager or a quorum "
            "vote): its runs take no cluster manager (group.active_passive.activation self)"
        )
    if ap.ha_replicate != "all":
        raise UsageError(
            f"ha_replicate {ap.ha_replicate}: Artemis replicates its whole journal to the "
            "backup, so only ha_replicate all can be expressed"
        )
    if settings.priority or settings.designated_primary or settings.quorum_override:
        raise UsageError(
            "priority, designated primary and quorum override are the Java broker's; "
            "Artemis has none of them"
        )
    if cluster.spares:
        raise UsageError("Artemis's brokers pair as they start: a group with spares is refused")
    if cluster.durability != Durability():
        raise UsageError(
            f"durability {cluster.durability.triplet}: the Java broker's durability triplet "
            "does not apply to Artemis (its journal syncs every durable message, and the "
            "primary acknowledges once its backup has it)"
        )
    if settings_of(settings).quorum and len(cluster.members) < 2:
        raise UsageError("quorum voting needs a primary and a backup (and voters beside them)")


def check_on_hosts(settings: ArtemisSettings) -> None:
    """Refuse activation settings that cannot work with each broker on a machine of its own."""
    if settings.quorum:
        raise UsageError(
            "activation quorum-voting on hosts: the voters' pairs have no hosts of their own; "
            "on hosts give lock-manager=zookeeper (zookeeper=lab, or your ensemble's host:port)"
        )
    if settings.lock_manager == "file":
        raise UsageError(
            "lock-manager file on hosts: a file lock cannot span machines; give "
            "--target-setting lock-manager=zookeeper and zookeeper=lab (the lab runs one for "
            "the run) or zookeeper=HOST:PORT (your ensemble)"
        )


def check_off_hosts(settings: ArtemisSettings, backend: str) -> None:
    """Refuse what only the hosts backend offers (the lab's ZooKeeper, zookeeper=lab)."""
    if settings.zookeeper == "lab":
        raise UsageError(
            f"zookeeper=lab on the {backend} backend: the lab runs a ZooKeeper for the run "
            "only on hosts (--backend ssh); here give your ensemble's host:port"
        )


def check_run(spec: RunSpec) -> None:
    """Refuse a run whose faults, workload or activation settings Artemis cannot express on
    its backend."""
    settings = settings_of(spec.group)
    if spec.backend == "ssh":
        check_on_hosts(settings)
    else:
        check_off_hosts(settings, spec.backend)
    for op in spec.schedule:
        if op.action != "start":
            continue
        if op.fault == "promote":
            raise UsageError(
                f"fault {op.id} (promote): Artemis has no command that makes a backup active "
                "while its primary runs: a backup activates only by itself, when its lock "
                "manager or a quorum vote lets it"
            )
        if op.target == MANAGER:
            raise UsageError(
                f"fault {op.id} ({op.fault} {MANAGER}): Artemis runs have no cluster manager "
                "to act on"
            )
    side = spec.workload.side
    if side is not None and side.replicate is not None:
        raise UsageError(
            f"queue {side.queue} declared with replication {side.replicate}: Artemis "
            "replicates every durable message of its journal, it has no per-queue "
            "replication (qpid.replicate)"
        )
    if spec.workload.virtual_address:
        raise UsageError(
            "the workload uses the virtual address: Artemis runs have no cluster manager to "
            "move one; clients are given every broker's address"
        )
