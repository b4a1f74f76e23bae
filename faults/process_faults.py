"""Faults on a node's process: kill -9 and restart; a graceful stop and start (the Java
broker's "Node Operations": stop, start); SIGSTOP/SIGCONT (a full-GC stall);
a real full garbage collection in a JVM node (`jcmd <pid> GC.run`)."""

from __future__ import annotations

from faults.abilities import as_collectable, as_killable, as_pausable, as_stoppable
from lab.ground.faultops import FaultOp

__all__ = ["FullGc", "GracefulStop", "Kill", "Pause"]


class Kill:
    """kill -9 the node; the heal starts it again on the same ports and data."""

    kind = "kill"

    def apply(self, cluster: object, op: FaultOp) -> None:
        as_killable(cluster, self.kind).kill(op.target)

    def heal(self, cluster: object, op: FaultOp) -> None:
        as_killable(cluster, self.kind).restart(op.target)


class GracefulStop:
    """Stop the node as an operator does: SIGTERM (`docker stop` in a container), so it
    closes its clients and leaves the group; killed only if it has not ended in 30 s. The
    heal starts it again on the same ports and data, to catch up and rejoin."""

    kind = "graceful_stop"

    def apply(self, cluster: object, op: FaultOp) -> None:
        as_stoppable(cluster, self.kind).stop_node(op.target)

    def heal(self, cluster: object, op: FaultOp) -> None:
        as_stoppable(cluster, self.kind).restart(op.target)


class Pause:
    """Freeze the node as a long full-GC stall would; the heal resumes it."""

    kind = "pause"

    def apply(self, cluster: object, op: FaultOp) -> None:
        as_pausable(cluster, self.kind).pause(op.target)

    def heal(self, cluster: object, op: FaultOp) -> None:
        as_pausable(cluster, self.kind).resume(op.target)


class FullGc:
    """A full garbage collection in the node's JVM, now; nothing to heal (it ends by itself).

    Beside `pause`: a pause is a stall of chosen length on any target; a full GC is the
    real event, as long as the JVM makes it."""

    kind = "full_gc"

    def apply(self, cluster: object, op: FaultOp) -> None:
        as_collectable(cluster, self.kind).full_gc(op.target)

    def heal(self, cluster: object, op: FaultOp) -> None:
        return None
