"""The values of a spec written by hand (an incident file, an edited spec.json), field by
field: each has the type its setting has and a value the lab can run, or a one-line
UsageError names the field (`workload.rate: must be a number > 0, not -1.0`).

Types come from the settings' dataclasses (`int`, `float`, `bool`, `str`, `… | None`);
ranges from `_RANGES`; role names (priority, designated primary) must name a node.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any

from lab.ground.cluster_settings import ActivePassiveSettings
from lab.ground.errors import UsageError
from lab.ground.spec import GroupSettings, SideQueue, Topology, Workload

__all__ = ["check_names", "check_section", "check_target_context"]

# The smallest value a setting may have: (bound, inclusive).
_RANGES: dict[str, tuple[float, bool]] = {
    "topology.nodes": (1, True),
    "workload.producers": (0, True),
    "workload.consumers": (0, True),
    "workload.rate": (0, False),
    "workload.size": (1, True),
    "workload.window": (1, True),
    "workload.duration_s": (0, False),
    "workload.drain_timeout_s": (0, False),
    "workload.heartbeat_s": (0, True),
    "group.quorum_override": (0, True),
    "group.heartbeat_interval_s": (0, False),
    "group.election_timeout_s": (0, False),
    "group.insufficient_replicas_timeout_s": (0, False),
    "group.rep_stream_timeout_s": (0, False),
    "group.active_passive.ha_backup_timeout_s": (0, True),
    "group.active_passive.link_heartbeat_interval_s": (0, False),
    "group.active_passive.link_maintenance_interval_s": (0, False),
    "group.active_passive.status_poll_interval_s": (0, False),
    "group.active_passive.status_timeout_s": (0, False),
}
_CLASSES: dict[str, type] = {
    "topology": Topology,
    "workload": Workload,
    "workload.side": SideQueue,
    "group": GroupSettings,
    "group.active_passive": ActivePassiveSettings,
}
_KIND = {int: "a whole number", float: "a number", bool: "true or false", str: "a string"}


def _accepts(kind: Any, value: object) -> bool | None:
    """Whether `value` has type `kind`; None when the type is not a plain one (checked by
    the setting itself)."""
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is str:
        return isinstance(value, str)
    return None


def _plain(kind: Any) -> tuple[Any, bool]:
    """(the type, whether None is allowed) of an annotation like `float | None`."""
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        parts = [p for p in typing.get_args(kind) if p is not type(None)]
        return (parts[0] if len(parts) == 1 else None), True
    return kind, False


def check_section(where: str, fields: Mapping[str, Any]) -> None:
    """Check a section's given fields (`where`: `workload`, `group.active_passive` …)."""
    cls = _CLASSES[where]
    hints = typing.get_type_hints(cls)
    for name in (f.name for f in dataclasses.fields(cls)):
        if name not in fields:
            continue
        value, path = fields[name], f"{where}.{name}"
        kind, optional = _plain(hints[name])
        if value is None and optional:
            continue
        accepted = _accepts(kind, value)
        if accepted is False:
            raise UsageError(f"{path}: must be {_KIND[kind]}, not {value!r}")
        if path in _RANGES and isinstance(value, int | float):
            bound, inclusive = _RANGES[path]
            if value < bound or (value == bound and not inclusive):
                relation = "≥" if inclusive else ">"
                raise UsageError(f"{path}: must be {relation} {bound:g}, not {value!r}")


def check_names(group: Mapping[str, Any], nodes: tuple[str, ...]) -> None:
    """Node names in the group settings must name nodes of the topology."""
    priority = group.get("priority", {})
    if not isinstance(priority, Mapping):
        raise UsageError("group.priority: must be a table of node = priority")
    for node, value in priority.items():
        if node not in nodes:
            raise UsageError(f"group.priority.{node}: no node named {node} ({', '.join(nodes)})")
        if not _accepts(int, value):
            raise UsageError(f"group.priority.{node}: must be a whole number, not {value!r}")
    designated = group.get("designated_primary", [])
    if not isinstance(designated, list | tuple):
        raise UsageError("group.designated_primary: must be a list of node names")
    for node in designated:
        if node not in nodes:
            raise UsageError(f"group.designated_primary: no node named {node!r}")


def check_target_context(value: object) -> None:
    """`group.target_context`: a table per target of settings, each a string."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise UsageError("group.target_context: must be a table of target = {setting = value}")
    for target, settings in value.items():
        where = f"group.target_context.{target}"
        if not isinstance(settings, Mapping):
            raise UsageError(f'{where}: must be a table of setting = "value"')
        for key, setting in settings.items():
            if not isinstance(setting, str):
                raise UsageError(f"{where}.{key}: must be a string, not {setting!r}")
