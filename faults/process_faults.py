"""Faults on a node's process: kill -9 and restart; SIGSTOP/SIGCONT (a full-GC stall)."""

from __future__ import annotations

from faults.base import as_killable, as_pausable
from faults.ops import FaultOp

__all__ = ["Kill", "Pause"]


class Kill:
    """kill -9 the node; the heal starts it again on the same ports and data."""

    kind = "kill"

    def apply(self, cluster: object, op: FaultOp) -> None:
        as_killable(cluster, self.kind).kill(op.target)

    def heal(self, cluster: object, op: FaultOp) -> None:
        as_killable(cluster, self.kind).restart(op.target)


class Pause:
    """Freeze the node as a long full-GC stall would; the heal resumes it."""

    kind = "pause"

    def apply(self, cluster: object, op: FaultOp) -> None:
        as_pausable(cluster, self.kind).pause(op.target)

    def heal(self, cluster: object, op: FaultOp) -> None:
        as_pausable(cluster, self.kind).resume(op.target)
