"""Faults of an active-passive cluster's operators (the C++ broker's active-passive chapter).

    promote          `qpid-ha --cluster-manager promote` run by hand on the target broker
                     while the cluster manager has a primary: the seed's warning, "Incorrect
                     use of promote outside of the cluster manager could create a cluster
                     with multiple primaries". A promotion cannot be undone: the heal is the
                     operator restarting the broker, which rejoins as a backup.
    restart_cluster  the remedy for a hung cluster (the seed's "Troubleshooting"): every
                     broker restarted, then the cluster manager (target: manager). Nothing
                     to heal.

The cluster manager itself is the target `manager` of `kill` (stop it; the heal starts it)
and `pause` (freeze it; the heal thaws it).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from faults.abilities import as_killable, as_managed, require_ability
from lab.ground.faultops import FaultOp

__all__ = ["ClusterRestartable", "Promote", "RestartCluster"]


@runtime_checkable
class ClusterRestartable(Protocol):
    def restart_cluster(self) -> None:
        """Stop every broker and the manager; start the brokers, then the manager."""
        ...


class Promote:
    kind = "promote"

    def apply(self, cluster: object, op: FaultOp) -> None:
        as_managed(cluster, self.kind).management(op.target).ha_action(action="promote")

    def heal(self, cluster: object, op: FaultOp) -> None:
        killable = as_killable(cluster, self.kind)
        killable.kill(op.target)
        killable.restart(op.target)


class RestartCluster:
    kind = "restart_cluster"

    def apply(self, cluster: object, op: FaultOp) -> None:
        restartable = require_ability(
            cluster, ClusterRestartable, self.kind, "with a cluster manager (active-passive)"
        )
        restartable.restart_cluster()

    def heal(self, cluster: object, op: FaultOp) -> None:
        return None
