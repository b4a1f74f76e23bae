"""Refusing, before anything starts, a schedule with a fault the cluster cannot apply."""

from __future__ import annotations

from collections.abc import Iterable

from faults.catalog import fault_for
from lab.ground.faultops import FaultOp

__all__ = ["preflight"]


def preflight(cluster: object, ops: Iterable[FaultOp]) -> None:
    """Raise for the first fault of `ops` the cluster cannot apply (a fault kind may offer
    `preflight(cluster, op)`; most need nothing checked); unknown kinds are refused too."""
    for op in ops:
        if op.action != "start":
            continue
        check = getattr(fault_for(op.fault), "preflight", None)
        if check is not None:
            check(cluster, op)
