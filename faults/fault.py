"""A fault (Jepsen's nemesis): a small object with `apply` and its `heal`.

Heals are idempotent: healing what is already healed does nothing harmful, so every
heal can run again in `finally`. `NoFault` applies and heals nothing, so a schedule,
a nemesis or a test can be composed without touching a cluster.

A heal raises `HealRefused` when the target refuses it for a reason the run itself
produced and no operator could overcome then (a node the group has thrown out refuses
any change to its HA attributes): the nemesis records the refusal and goes on, and the
judge weighs what happened. Any other error from a heal still ends the run.
"""

from __future__ import annotations

from typing import Protocol

from lab.ground.errors import ClusterError
from lab.ground.faultops import FaultOp

__all__ = ["Fault", "HealRefused", "NoFault"]


class HealRefused(ClusterError):
    """The target refused a heal in a state the run led it to (say which, and why)."""


class Fault(Protocol):
    """A kind of fault. `heal` must undo `apply` and be safe to run more than once."""

    @property
    def kind(self) -> str:
        """The fault's name in schedules."""
        ...

    def apply(self, cluster: object, op: FaultOp) -> None:
        """Inject the fault described by a `start` operation."""
        ...

    def heal(self, cluster: object, op: FaultOp) -> None:
        """Undo it; called for the matching `stop`, and again in `finally`."""
        ...


class NoFault:
    """The fault that does nothing (Jepsen's `noop`)."""

    kind = "noop"

    def apply(self, cluster: object, op: FaultOp) -> None:
        return None

    def heal(self, cluster: object, op: FaultOp) -> None:
        return None
