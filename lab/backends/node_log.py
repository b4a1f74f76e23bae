"""A node's operational log as both backends read it: each line is kept in
`nodes/<node>/broker.log`, and a line the target can parse becomes a `broker.log` event
and, when it reports the node's own role change, a `node.role` event (an active-passive
broker's HA status change, a `node.ha` event)."""

from __future__ import annotations

from typing import IO

from lab.ground.events import Events
from lab.targets.protocol import Target

__all__ = ["take_log_line"]


def take_log_line(line: str, log: IO[str], target: Target, events: Events, node: str) -> None:
    log.write(line)
    record = target.parse_log_line(line)
    if record is None:
        return
    events.emit("broker.log", node, code=record.code, level=record.level, text=record.text)
    change = record.role_change
    if change is not None:
        events.emit("node.role", node, role=change[1], previous=change[0])
    status = record.status_change
    if status is not None:
        events.emit("node.ha", node, status=status[1], previous=status[0])
    if record.took_role is not None:
        events.emit("node.role", node, role=record.took_role)
    if record.took_status is not None:
        events.emit("node.ha", node, status=record.took_status)
