"""The group's membership as operator operations (Broker-J's HA chapter, "Creating a
group" and "Node Operations"): a node added to the running group, a node deleted from it.

    add_node      start a spare (a node planned from the start, never started): it names a
                  helper, its address is among the group's permitted nodes, and the master
                  admits it; it catches up and becomes a replica. A node removed earlier is
                  started again the same way: the group refuses its name ("The names of
                  deleted virtualhost node cannot be reused within a group").
    remove_node   stop the node gracefully, then ask the master to remove it from the group
                  for good ("permanently removes the node from the group").

Neither has a heal: a node added is a member like the others, and a removed node cannot
come back (adding it again is another operation, which the group refuses).
"""

from __future__ import annotations

from faults.abilities import as_joinable, as_removable
from lab.ground.faultops import FaultOp

__all__ = ["AddNode", "RemoveNode"]


class AddNode:
    kind = "add_node"

    def preflight(self, cluster: object, op: FaultOp) -> None:
        as_joinable(cluster, self.kind)

    def apply(self, cluster: object, op: FaultOp) -> None:
        as_joinable(cluster, self.kind).add_node(op.target)

    def heal(self, cluster: object, op: FaultOp) -> None:
        return None


class RemoveNode:
    kind = "remove_node"

    def preflight(self, cluster: object, op: FaultOp) -> None:
        as_removable(cluster, self.kind)

    def apply(self, cluster: object, op: FaultOp) -> None:
        as_removable(cluster, self.kind).remove_node(op.target)

    def heal(self, cluster: object, op: FaultOp) -> None:
        return None
