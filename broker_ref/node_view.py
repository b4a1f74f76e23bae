"""What the management API reads and changes of a node (management.NodeView), from the
management thread.

A replicated group's node shows Broker-J's virtualhostnode attributes and takes changes
of priority, designatedPrimary, quorumOverride and role=MASTER (transfer master). An
active-passive broker shows its HA status (`qpid-ha status`) and takes a cluster
manager's promotion and a queue's replication level.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker_ref.active_passive import ActivePassive, PromotionRefused
from broker_ref.config import NodeConfig
from broker_ref.errors import ChangeRefused
from broker_ref.frame_log import FrameLog
from broker_ref.group import Group
from broker_ref.mailbox import Mailbox
from broker_ref.queues import QueueBook
from broker_ref.records import LEVELS
from broker_ref.roles import RoleTracker
from broker_ref.self_elected import SelfElected

__all__ = ["NodeManagementView"]

_ATTRIBUTES = {"priority", "designatedPrimary", "quorumOverride", "role"}


class NodeManagementView:
    def __init__(
        self,
        config: NodeConfig,
        roles: RoleTracker,
        frames: FrameLog,
        queues: QueueBook,
        mailbox: Mailbox,
    ) -> None:
        self.config = config
        self._roles = roles
        self._frames = frames
        self._queues = queues
        self._mailbox = mailbox
        self.group: Group | None = None  # set once the node serves
        # Reactor side: set a queue's replication level; how many messages were consumed
        # before the backups held them (active-passive).
        self.set_replication: Callable[[str, str], None] = lambda queue, level: None
        self.consumed_first: Callable[[], int] = lambda: 0

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def credentials(self) -> tuple[str, str]:
        return self.config.management_user, self.config.management_password

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "name": self.config.name, "role": self._roles.current.value}

    def virtualhostnode(self) -> dict[str, Any]:
        config = self.config
        group = self.group
        mode = group.mode if group else None
        settings = mode.settings if isinstance(mode, SelfElected) else None
        body = {
            "name": config.name,
            "groupName": config.group,
            "role": self._roles.current.value,
            "priority": settings.priority if settings else config.priority,
            "designatedPrimary": (
                settings.designated_primary if settings else config.designated_primary
            ),
            "quorumOverride": settings.quorum_override if settings else config.quorum_override,
            "lastKnownReplicationTransactionId": self._frames.last_txid,
            "term": group.term if group else 0,
            "address": f"{config.host}:{config.replication_port}",
            "permittedNodes": list(config.permitted_nodes or (config.name,)),
            "durability": str(config.durability),
            "coalescingSync": config.coalescing_sync,
            "mode": config.mode,
            "queues": {
                name: {"depth": stats.depth, "unacked": stats.unacked}
                for name, stats in sorted(self._queues.stats().items())
            },
        }
        if config.active_passive:
            body["haStatus"] = mode.status.value if isinstance(mode, ActivePassive) else "joining"
        return body

    def remote_nodes(self) -> list[dict[str, Any]]:
        return self.group.peer_view() if self.group else []

    def set_attributes(self, changes: dict[str, Any]) -> None:
        """Validate every change first; apply all or none (Broker-J answers 422 on a bad one)."""
        group = self.group
        if group is None:
            raise ChangeRefused("the node is not running yet")
        mode = group.mode
        if not isinstance(mode, SelfElected):
            raise ChangeRefused(
                "an active-passive broker has no group attributes: a cluster manager promotes "
                "its primary (/api/latest/ha)"
            )
        unknown = sorted(set(changes) - _ATTRIBUTES)
        if unknown:
            raise ChangeRefused(f"cannot change attribute(s) {', '.join(unknown)}")
        _check_attributes(changes, group.core.size)
        attributes = {k: v for k, v in changes.items() if k != "role"}
        applied = not attributes or group.call_and_wait(lambda: mode.set_attributes(attributes))
        if not applied:
            raise ChangeRefused("the node's group thread did not confirm the change within 5 s")
        if "role" in changes:
            why_not = mode.request_transfer()
            if why_not is not None:
                raise ChangeRefused(f"cannot transfer mastership here: {why_not}")

    def remove_node(self, name: str) -> None:
        """The master removes a stopped member from the group for good (node operations)."""
        group = self.group
        mode = group.mode if group else None
        if group is None or not isinstance(mode, SelfElected):
            raise ChangeRefused("only a running node of a replicated group removes nodes", 409)
        refused = group.ask(lambda: mode.remove_member(name))
        if refused is not None:
            raise ChangeRefused(refused[1], refused[0])

    # ---- the active-passive cluster ------------------------------------------------------------

    def _active_passive(self) -> tuple[Group, ActivePassive] | None:
        group = self.group
        if group is None or not isinstance(group.mode, ActivePassive):
            return None
        return group, group.mode

    def ha(self) -> dict[str, Any]:
        """The broker's HA status: `standalone` when not in an active-passive cluster."""
        if not self.config.active_passive:
            return {"status": "standalone", "name": self.config.name}
        found = self._active_passive()
        view: dict[str, Any] = (
            {"status": "joining"} if found is None else found[0].ask(found[1].view)
        )
        view.update(
            name=self.config.name,
            replicate=self.config.ha_replicate,
            consumedBeforeReplication=self.consumed_first(),
        )
        return view

    def ha_action(self, request: dict[str, Any]) -> None:
        """`{"action": "promote"}` (a cluster manager's), or `{"action": "replicate",
        "queue": q, "level": none|configuration|all}`; ChangeRefused says why not."""
        found = self._active_passive()
        if found is None:
            raise ChangeRefused("this broker is not in an active-passive cluster (or not up yet)")
        group, mode = found
        action = request.get("action")
        if action == "promote":
            try:
                group.ask(mode.promote)
            except PromotionRefused as exc:
                raise ChangeRefused(str(exc)) from None
        elif action == "replicate":
            queue, level = request.get("queue"), request.get("level")
            if not isinstance(queue, str) or not queue or level not in LEVELS:
                raise ChangeRefused(
                    f"replicate needs a queue and a level ({', '.join(LEVELS)}), "
                    f"not {queue!r} {level!r}"
                )
            self._mailbox.ask(lambda: self.set_replication(queue, str(level)))
        else:
            raise ChangeRefused(f"unknown action {action!r} (promote, replicate)")


def _check_attributes(changes: dict[str, Any], size: int) -> None:
    if "priority" in changes:
        value = changes["priority"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 3:
            raise ChangeRefused(f"priority must be an integer 0..3, not {value!r}")
    if "quorumOverride" in changes:
        value = changes["quorumOverride"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= size:
            raise ChangeRefused(
                f"quorumOverride must be an integer 0..{size} (the group's size), not {value!r}"
            )
    if "designatedPrimary" in changes:
        value = changes["designatedPrimary"]
        if not isinstance(value, bool):
            raise ChangeRefused(f"designatedPrimary must be true or false, not {value!r}")
        if size != 2:
            raise ChangeRefused(
                f"designatedPrimary applies only to a group of two nodes (this one has {size})"
            )
    if "role" in changes and changes["role"] != "MASTER":
        raise ChangeRefused(f"role can only be set to MASTER, not {changes['role']!r}")
