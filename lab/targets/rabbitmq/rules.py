"""What a RabbitMQ cluster can be, checked before anything starts: each refusal is one line
that says why (a UsageError, exit status 2)."""

from __future__ import annotations

from lab.ground.errors import UsageError
from lab.ground.nodes import ClusterPlan
from lab.ground.spec import Durability, GroupSettings, RunSpec, Workload
from lab.targets.rabbitmq.settings import TARGET, RabbitSettings

__all__ = ["QUEUE", "check_plan", "check_run", "settings_of"]

QUEUE = Workload().queue  # the one queue the lab declares, of the run's queue type

# Faults RabbitMQ has nothing for, and why (an operator's tools the Qpid documents name).
NO_SUCH_THING = {
    "designate_primary": "RabbitMQ has no designated primary: a quorum queue needs a majority "
    "of its members, a mirrored queue promotes a mirror by itself",
    "quorum_override": "RabbitMQ has no quorum override: a quorum queue's majority is fixed by "
    "its members",
    "set_priority": "RabbitMQ has no election priorities (a quorum queue's Raft election and a "
    "mirrored queue's promotion of its oldest mirror take none)",
    "transfer_master": "RabbitMQ 3.10 has no operator command that moves a queue's leader to a "
    "chosen node (rabbitmq-queues rebalance spreads leaders, it does not choose)",
    "promote": "RabbitMQ has no command that promotes a mirror while its master runs",
    "full_gc": "RabbitMQ's nodes are Erlang VMs, with no full garbage collection to ask for "
    "(the pause fault models a stall)",
    "add_node": "the lab forms a RabbitMQ cluster of its nodes as they start: it adds no node "
    "to a running one (a quorum queue would not take it as a member unasked)",
    "remove_node": "the lab removes no node from a RabbitMQ cluster (rabbitmqctl "
    "forget_cluster_node is not the Java broker's removal through its master)",
}


def settings_of(group: GroupSettings) -> RabbitSettings:
    return RabbitSettings.parse(group.target_context.get(TARGET, {}))


def check_plan(cluster: ClusterPlan) -> None:
    """Refuse a group RabbitMQ cannot form."""
    settings = cluster.settings
    if settings.is_active_passive:
        raise UsageError(
            "RabbitMQ has no active-passive cluster with a cluster manager: a mirrored queue "
            "promotes one of its mirrors by itself and a quorum queue elects its leader, so "
            "both run as a replicated group (--target-setting queue-type=mirrored)"
        )
    if settings.priority or settings.designated_primary or settings.quorum_override:
        raise UsageError(
            "priority, designated primary and quorum override are the Java broker's; "
            "RabbitMQ has none of them"
        )
    if cluster.spares:
        raise UsageError(
            "the lab forms a RabbitMQ cluster of the nodes it starts with: a group with "
            "spares is refused"
        )
    if cluster.durability != Durability():
        raise UsageError(
            f"durability {cluster.durability.triplet}: the Java broker's durability triplet "
            "does not apply to RabbitMQ (a quorum queue confirms once a majority of its "
            "members has the message on disk, a mirrored queue once every mirror has it)"
        )
    settings_of(settings)


def check_run(spec: RunSpec) -> None:
    """Refuse a run whose faults or workload RabbitMQ cannot express."""
    for op in spec.schedule:
        why = NO_SUCH_THING.get(op.fault)
        if op.action == "start" and why is not None:
            raise UsageError(f"fault {op.id} ({op.fault}): {why}")
    workload = spec.workload
    if workload.side is not None:
        raise UsageError(
            f"queue {workload.side.queue} beside the workload's: the lab declares one queue "
            "of the run's queue type on RabbitMQ (per-queue replication levels are the C++ "
            "broker's qpid.replicate)"
        )
    if workload.queue != QUEUE:
        raise UsageError(
            f"queue {workload.queue!r}: on RabbitMQ the lab declares the queue {QUEUE!r} of the "
            "run's queue type before the load"
        )
    if workload.virtual_address:
        raise UsageError(
            "the workload uses the virtual address: RabbitMQ runs have no cluster manager to "
            "move one; clients are given every node's address"
        )
