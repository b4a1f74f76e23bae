"""The roles a virtualhost node reports, named as Broker-J's BDB HA nodes name them."""

from __future__ import annotations

import enum

from broker_ref.oplog import Code, OperationalLog

__all__ = ["Role", "RoleTracker"]


class Role(enum.Enum):
    """A node's role in its group; only a MASTER serves messaging clients."""

    MASTER = "MASTER"
    REPLICA = "REPLICA"
    WAITING = "WAITING"
    UNREACHABLE = "UNREACHABLE"
    DETACHED = "DETACHED"


class RoleTracker:
    """A node's current role; every change is reported as Broker-J's HA-1010.

    Changed only by the reactor thread; `current` may be read from any thread.
    """

    def __init__(self, node: str, oplog: OperationalLog, initial: Role = Role.WAITING) -> None:
        self._node = node
        self._oplog = oplog
        self.current = initial

    def change(self, role: Role) -> None:
        """Take `role`, logging the change; taking the current role again logs nothing."""
        old, self.current = self.current, role
        if old is not role:
            self._oplog.info(
                Code.ROLE_CHANGE,
                f"Role change reported: Node : '{self._node}'"
                f" : from '{old.value}' to '{role.value}'",
            )
