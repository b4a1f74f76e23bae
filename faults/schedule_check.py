"""A schedule checked as a whole before anything starts: every fault known, every target one
the cluster has, every heal after its fault, times inside the load, no two faults on one
link at once. A hand-written incident, an edited spec.json and a shrunk schedule all pass
through here; the first problem is a one-line UsageError naming the fault and the field.

    check_schedule(ops, nodes, duration_s, managed=False, spares=())

The group's membership is followed through the schedule: `add_node` starts a spare not yet
added, or a node a `remove_node` took out before (named, or `@removed`); `remove_node` takes
out a member (never a spare not yet added, nor a node already removed); no other fault
acts on a spare before it is added.

What the cluster can apply (a partition of Broker-J nodes on local processes …) is the
preflight's business, once the cluster is known (faults.preflight).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import pairwise

from faults.catalog import fault_for
from faults.selectors import split_sides
from lab.ground.errors import UsageError
from lab.ground.faultops import FaultOp

__all__ = ["check_schedule"]

# What each fault kind's target names; kinds not listed take a node.
_LINK_FAULTS = frozenset({"cut", "latency", "bandwidth", "timeout", "reset_peer"})
_GROUP_FAULTS = frozenset({"partition", "one_way_partition"})
_MANAGER_FAULTS = frozenset({"kill", "pause"})  # the cluster manager is a fault target too
_CLUSTER_FAULTS = frozenset({"restart_cluster"})
ADD_NODE, REMOVE_NODE = "add_node", "remove_node"
REMOVED = "@removed"  # add_node's target: the node the last remove_node took out
MANAGER = "manager"
VIP = "client_vip"  # an active-passive cluster's virtual address (lab.backends.managed)
_ROLE = re.compile(r"^@(master|replica)(?::[1-9]\d*)?$")


def _describe(op: FaultOp) -> str:
    return f"fault {op.id} ({op.fault} {op.target} at {op.at_s:g} s)"


def _node_name(name: str, nodes: Sequence[str]) -> str | None:
    """Why `name` names no node of the cluster (None when it does, or is a role)."""
    if _ROLE.match(name) or name in nodes:
        return None
    if name.startswith("@"):
        return f"bad role {name!r}: use @master, @replica or @replica:N"
    return f"unknown node {name!r} (nodes: {', '.join(nodes)})"


def _link_name(name: str, nodes: Sequence[str]) -> str | None:
    if name.startswith("client_to_"):
        return _node_name(name.removeprefix("client_to_"), nodes)
    source, sep, dest = name.partition("_to_")
    if not sep:
        return f"{name!r} is not a link: use client_to_<node> or <node>_to_<node>"
    return _node_name(source, nodes) or _node_name(dest, nodes)


def _target_problem(
    op: FaultOp, nodes: Sequence[str], managed: bool, manager: bool = True
) -> str | None:
    if op.fault in _LINK_FAULTS:
        if managed and manager and op.target == VIP:
            return None  # the virtual address: the clients' one link to the primary
        return _link_name(op.target, nodes)
    if op.fault in _GROUP_FAULTS:
        sides = op.params.get("sides")
        if not isinstance(sides, str):
            return "params.sides is missing: write the two sides as 'n1|n2,n3'"
        try:
            a, b = split_sides(sides)
        except UsageError as exc:
            return str(exc)
        for name in (*a, *b):
            problem = _node_name(name, nodes)
            if problem is not None:
                return f"params.sides: {problem}"
        return None
    if op.fault in _CLUSTER_FAULTS:
        return None if managed else "restart_cluster needs an active-passive cluster"
    if op.fault in (ADD_NODE, REMOVE_NODE) and managed:
        return f"{op.fault} changes a replicated group's membership: not in active-passive mode"
    if op.fault == ADD_NODE and op.target.startswith("@"):
        if op.target == REMOVED:
            return None
        return "add_node starts a spare or a removed node: name it, or write @removed"
    if op.target == MANAGER:
        if op.fault in _MANAGER_FAULTS and managed and manager:
            return None
        if managed and not manager:
            return "the brokers activate themselves: there is no cluster manager to act on"
        return "only kill and pause act on the cluster manager, in active-passive mode"
    return _node_name(op.target, nodes)


class _Membership:
    """Who is in the group as the schedule goes: spares not yet added, nodes removed."""

    def __init__(self, spares: Sequence[str]) -> None:
        self.spares = tuple(spares)
        self.waiting = set(spares)  # spares not yet added
        self.added: dict[str, str] = {}  # spare -> the fault that added it
        self.removed: dict[str, str] = {}  # node named by a remove_node -> that fault
        self.removals = 0  # remove_node operations so far, named or by role

    def problem(self, op: FaultOp) -> str | None:
        """Why `op` (a start) makes no sense for the group as it is then; None if it does."""
        name = op.target
        if op.fault == ADD_NODE:
            return self._add(op.id, name)
        if op.fault == REMOVE_NODE:
            if name in self.waiting:
                return f"{name} is a spare not yet added (add_node it first)"
            if name in self.removed:
                return f"{name} was already removed by fault {self.removed[name]}"
            self.removals += 1
            if not name.startswith("@"):
                self.removed[name] = op.id
            return None
        if op.fault not in _LINK_FAULTS | _GROUP_FAULTS and name in self.waiting:
            return f"{name} is a spare not yet added: add_node it before {op.fault}"
        return None

    def _add(self, fault_id: str, name: str) -> str | None:
        if name == REMOVED:
            return None if self.removals else f"{REMOVED}: no remove_node before it"
        if name in self.waiting:
            self.waiting.discard(name)
            self.added[name] = fault_id
            return None
        if name in self.removed or self.removals > len(self.removed):
            return None  # removed by name, or perhaps by a role (which may be any member)
        if name in self.added:
            return f"{name} was already added by fault {self.added[name]}"
        spares = ", ".join(self.spares) or "none"
        return f"{name} is not a spare (spares: {spares}) and no remove_node before took it out"


def check_schedule(
    ops: Iterable[FaultOp],
    nodes: Sequence[str],
    duration_s: float,
    *,
    managed: bool = False,
    spares: Sequence[str] = (),
    manager: bool = True,
) -> None:
    """Raise UsageError for the first problem of the schedule `ops` on a cluster of `nodes`
    whose load lasts `duration_s` (`managed`: an active-passive cluster, with a manager and
    a virtual address unless `manager` is False: brokers that activate themselves;
    `spares`: nodes started only by add_node)."""
    started: dict[str, FaultOp] = {}
    stopped: dict[str, FaultOp] = {}
    membership = _Membership(spares)
    for op in sorted(ops, key=lambda o: (o.at_s, o.action == "start")):
        where = _describe(op)
        try:
            fault_for(op.fault)
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from None
        if op.at_s < 0:
            raise UsageError(f"{where}: at_s cannot be negative")
        if op.at_s > duration_s:
            raise UsageError(f"{where}: at_s is after the load ends (duration_s {duration_s:g})")
        if op.action == "start":
            if op.id in started:
                raise UsageError(f"{where}: a second start of fault {op.id}")
            problem = _target_problem(op, nodes, managed, manager) or membership.problem(op)
            if problem is not None:
                raise UsageError(f"{where}: target: {problem}")
            problem = _kill_params_problem(op)
            if problem is not None:
                raise UsageError(f"{where}: params: {problem}")
            started[op.id] = op
        else:
            start = started.get(op.id)
            if start is None:
                raise UsageError(f"{where}: a heal before its fault (no start of {op.id} before)")
            if op.id in stopped:
                raise UsageError(f"{where}: a second heal of fault {op.id}")
            if (op.fault, op.target) != (start.fault, start.target):
                raise UsageError(
                    f"{where}: heals {op.fault} {op.target}, but {op.id} started as "
                    f"{start.fault} {start.target}"
                )
            problem = _trigger_problem(start, op)
            if problem is not None:
                raise UsageError(f"{where}: {problem}")
            stopped[op.id] = op
    _check_links_one_at_a_time(started, stopped, duration_s)


def _kill_params_problem(op: FaultOp) -> str | None:
    """A kill takes one parameter, `host` (true: the node dies as its host does, its links
    cut first), and not on the cluster manager, which has no links of its own."""
    if op.fault != "kill" or not op.params:
        return None
    extra = sorted(set(op.params) - {"host"})
    if extra:
        return f"kill takes only host (true or false), not {', '.join(extra)}"
    if not isinstance(op.params["host"], bool):
        return f"host is true or false, not {op.params['host']!r}"
    if op.params["host"] and op.target == MANAGER:
        return "host: the cluster manager has no node links to cut"
    return None


def _trigger_problem(start: FaultOp, stop: FaultOp) -> str | None:
    """A triggered start's heal comes `after_s` after it struck, and its time is the latest
    that can be; a heal of a start without a trigger comes at its time."""
    if start.when is None:
        if stop.after_s is not None:
            return f"after_s is for the heal of a fault with `when` ({start.id} has none)"
        return None
    if stop.after_s is None:
        return f"the heal of a fault with `when` ({start.when}) needs after_s"
    latest = round(start.at_s + start.within_s + stop.after_s, 3)
    if abs(stop.at_s - latest) > 1e-3:
        return (
            f"at_s must be the latest the heal can come ({latest:g} s: the fault's at_s, "
            f"within_s and after_s), not {stop.at_s:g}"
        )
    return None


def _check_links_one_at_a_time(
    started: dict[str, FaultOp], stopped: dict[str, FaultOp], duration_s: float
) -> None:
    """Two faults on one link at once would heal each other: refused."""
    windows: dict[str, list[tuple[float, float, str]]] = {}
    for fault_id, op in started.items():
        if op.fault not in _LINK_FAULTS:
            continue
        end = stopped[fault_id].at_s if fault_id in stopped else duration_s
        windows.setdefault(op.target, []).append((op.at_s, end, fault_id))
    for link, spans in windows.items():
        spans.sort()
        for (_, end, first), (start, _, second) in pairwise(spans):
            if start < end:
                raise UsageError(
                    f"fault {second} ({started[second].fault} {link} at {start:g} s): "
                    f"overlaps fault {first} on the same link (until {end:g} s)"
                )
