"""Operator actions through the nodes' management API (lab.targets.management), each with its heal.

    designate_primary   designatedPrimary true on the target; heal: false (refused by a
                        node out of the group: recorded, the run goes on)
    quorum_override     quorumOverride = params.value (default 1); heal: 0 (the default)
    set_priority        priority = params.value (0 Never … 3 Highest); heal: the value the
                        node reported just before
    transfer_master     role MASTER on the target (Broker-J's transfer master)

A transfer has no heal: afterwards the group has another master and every node is
in a healthy role, so there is nothing to undo; moving mastership back would be a
second transfer with its own effects, not a repair.
"""

from __future__ import annotations

from faults.abilities import as_managed
from faults.fault import HealRefused
from lab.ground.errors import ClusterError, UsageError
from lab.ground.faultops import FaultOp

__all__ = ["DesignatePrimary", "QuorumOverride", "SetPriority", "TransferMaster"]

DETACHED = "DETACHED"  # the role a Broker-J node reports once out of its group


def _int_param(op: FaultOp, name: str, default: int, low: int, high: int) -> int:
    raw = op.params.get(name, default)
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise UsageError(f"fault {op.id}: params.{name} must be an integer")
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"fault {op.id}: params.{name} must be an integer") from None
    if not low <= value <= high:
        raise UsageError(f"fault {op.id}: params.{name} must be in {low}..{high}")
    return value


class DesignatePrimary:
    """The heal clears the designation. A node out of the group (DETACHED: Broker-J's node
    whose JE environment failed, as when two designated primaries meet after a partition,
    "Conflicting Primary designations") refuses to change it until it is restarted: that
    refusal is a `HealRefused`, with the node's answer; any other is raised as it is."""

    kind = "designate_primary"

    def apply(self, cluster: object, op: FaultOp) -> None:
        as_managed(cluster, self.kind).management(op.target).set_attributes(designatedPrimary=True)

    def heal(self, cluster: object, op: FaultOp) -> None:
        node = as_managed(cluster, self.kind).management(op.target)
        try:
            node.set_attributes(designatedPrimary=False)
        except ClusterError as refused:
            try:
                role = node.node_attributes().get("role")
            except ClusterError:
                raise refused from None
            # a refusal is an answer (it carries the node's status); a timeout is not
            if role != DETACHED or getattr(refused, "status", None) is None:
                raise
            raise HealRefused(
                f"{op.target} refused to clear designatedPrimary while {DETACHED} "
                f"(out of the group until restarted): {refused}"
            ) from refused


class QuorumOverride:
    kind = "quorum_override"

    def apply(self, cluster: object, op: FaultOp) -> None:
        value = _int_param(op, "value", 1, 0, 99)
        as_managed(cluster, self.kind).management(op.target).set_attributes(quorumOverride=value)

    def heal(self, cluster: object, op: FaultOp) -> None:
        as_managed(cluster, self.kind).management(op.target).set_attributes(quorumOverride=0)


class SetPriority:
    """The priority read before applying is kept (by cluster and fault id) for the heal."""

    kind = "set_priority"

    def __init__(self) -> None:
        self._before: dict[tuple[int, str, str], int] = {}

    def apply(self, cluster: object, op: FaultOp) -> None:
        value = _int_param(op, "value", 0, 0, 3)
        client = as_managed(cluster, self.kind).management(op.target)
        before = client.node_attributes().get("priority", 1)
        self._before[(id(cluster), op.id, op.target)] = int(before)
        client.set_attributes(priority=value)

    def heal(self, cluster: object, op: FaultOp) -> None:
        before = self._before.get((id(cluster), op.id, op.target))
        if before is None:  # never applied: nothing to restore
            return
        as_managed(cluster, self.kind).management(op.target).set_attributes(priority=before)


class TransferMaster:
    kind = "transfer_master"

    def apply(self, cluster: object, op: FaultOp) -> None:
        as_managed(cluster, self.kind).management(op.target).set_attributes(role="MASTER")

    def heal(self, cluster: object, op: FaultOp) -> None:
        return None
