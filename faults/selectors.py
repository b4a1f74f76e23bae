"""Fault targets that name a role, resolved when the fault is applied.

    @master        the node that is MASTER at that moment (exactly one must be)
    @replica       the first node, in name order, that answers and is not the master
    @replica:2     the second such node
    @removed       the node the last remove_node took out of the group (for add_node: the
                   removed node started again, to show the group refuses its name)
    n1             a node by name (left as it is)

A selector may also stand inside a link name (`client_to_@master`, `@master_to_@replica`),
and a `partition`'s `sides` parameter may use them too ("@master|@replica:1").
The resolved names go into schedule.jsonl's applied entry and into the heal, so a
fault is healed on the node it hit even if the roles have changed since.

When the roles do not let a selector pick a node (no master, two masters, too few replicas
answering, nothing removed), `resolve_op` waits up to 5 s for an election under way, then
raises `Unresolved`: the nemesis records that step as not applied and the run goes on
(faults.nemesis).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from faults.abilities import as_removable, as_roled
from lab.ground.errors import ClusterError, UsageError
from lab.ground.faultops import FaultOp

__all__ = ["REMOVED", "Unresolved", "has_selector", "resolve_name", "resolve_op", "split_sides"]

REMOVED = "@removed"

_SELECTOR = re.compile(r"^@(master|replica)(?::([1-9]\d*))?$")
_EMBEDDED = re.compile(r"@(?:master|replica)(?::[1-9]\d*)?")
_SIDES_PARAM = "sides"


class _NotYet(ClusterError):
    """The roles do not (yet) let a selector pick a node."""


class Unresolved(ClusterError):
    """A selector found no node to pick at its moment, after waiting: the roles (or the
    removals) the cluster showed, in the message."""


def _is_selector(name: str) -> bool:
    return name.startswith("@")


def split_sides(sides: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`"n1|n2,n3"` as (("n1",), ("n2", "n3")); each side needs at least one name."""
    halves = sides.split("|")
    if len(halves) != 2:
        raise UsageError(f"partition sides {sides!r}: write two sides as 'n1|n2,n3'")
    a, b = (tuple(n.strip() for n in half.split(",") if n.strip()) for half in halves)
    if not a or not b:
        raise UsageError(f"partition sides {sides!r}: each side needs at least one node")
    if set(a) & set(b):
        raise UsageError(f"partition sides {sides!r}: a node cannot be on both sides")
    return a, b


def has_selector(op: FaultOp) -> bool:
    if "@" in op.target:
        return True
    sides = op.params.get(_SIDES_PARAM)
    return isinstance(sides, str) and "@" in sides


def resolve_name(name: str, roles: Mapping[str, str | None]) -> str:
    """The node `name` selects given each node's role; a plain name is returned as it is."""
    if not _is_selector(name):
        return name
    found = _SELECTOR.match(name)
    if found is None:
        raise UsageError(f"bad target {name!r}: use @master, @replica or @replica:N")
    masters = sorted(n for n, r in roles.items() if r == "MASTER")
    if found.group(1) == "master":
        if len(masters) != 1:
            raise _NotYet(f"{name}: {len(masters)} masters ({_describe(roles)})")
        return masters[0]
    index = int(found.group(2) or 1)
    others = sorted(n for n, r in roles.items() if r is not None and r != "MASTER")
    if len(others) < index:
        raise _NotYet(
            f"{name}: only {len(others)} answering non-master node(s) ({_describe(roles)})"
        )
    return others[index - 1]


def _describe(roles: Mapping[str, str | None]) -> str:
    return ", ".join(f"{n}={r or 'no answer'}" for n, r in sorted(roles.items()))


def _resolved(op: FaultOp, roles: Mapping[str, str | None]) -> FaultOp:
    params = dict(op.params)
    sides = params.get(_SIDES_PARAM)
    if isinstance(sides, str):
        a, b = split_sides(sides)
        params[_SIDES_PARAM] = (
            ",".join(resolve_name(n, roles) for n in a)
            + "|"
            + ",".join(resolve_name(n, roles) for n in b)
        )
    target = _EMBEDDED.sub(lambda m: resolve_name(m.group(0), roles), op.target)
    if "@" in target:
        raise UsageError(f"bad target {op.target!r}: use @master, @replica or @replica:N")
    return replace(op, target=target, params=params)


def resolve_op(
    cluster: object,
    op: FaultOp,
    *,
    wait_s: float = 5.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> FaultOp:
    """`op` with its selectors replaced by node names, read from the cluster's roles.

    Waits up to `wait_s` for roles that let every selector pick a node (an election
    may be under way); then raises ClusterError naming the roles it saw.
    """
    if not has_selector(op):
        return op
    if op.target == REMOVED:
        removed = as_removable(cluster, op.fault).removed_nodes()
        if not removed:
            raise Unresolved(f"fault {op.id}: {REMOVED}: no node has been removed")
        return replace(op, target=removed[-1])
    roled = as_roled(cluster, op.fault)
    deadline = clock() + wait_s
    while True:
        roles = roled.roles()
        try:
            return _resolved(op, roles)
        except _NotYet as exc:
            if clock() >= deadline:
                raise Unresolved(
                    f"fault {op.id}: cannot resolve {exc} after waiting {wait_s:g} s"
                ) from None
        sleep(0.05)
