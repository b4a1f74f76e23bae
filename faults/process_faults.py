"""Faults on a node's process: kill -9 and restart (perhaps as a host's crash, its links cut
first); a graceful stop and start (the Java
broker's "Node Operations": stop, start); SIGSTOP/SIGCONT (a full-GC stall);
a real full garbage collection in a JVM node (`jcmd <pid> GC.run`)."""

from __future__ import annotations

from faults.abilities import as_collectable, as_killable, as_linked, as_pausable, as_stoppable
from faults.partition_faults import set_node_links
from lab.ground.faultops import FaultOp

__all__ = ["FullGc", "GracefulStop", "Kill", "Pause"]


class Kill:
    """kill -9 the node; the heal starts it again on the same ports and data.

    With `host: true` the node dies as its host does: its links to the other nodes are cut
    first, so that what it had in flight to them (a slowed link's backlog in the proxies)
    dies with it instead of reaching them after its death; the heal restores the links, then
    starts it. (The same as an `isolate` and a `kill` of one node, but one step: a kill that
    waits for the cluster strikes whichever node it names then, links and process alike.)"""

    kind = "kill"

    def preflight(self, cluster: object, op: FaultOp) -> None:
        if op.params.get("host"):
            as_linked(cluster, self.kind).check_peer_links("cut")

    def apply(self, cluster: object, op: FaultOp) -> None:
        if op.params.get("host"):
            set_node_links(cluster, self.kind, op.target, False)
        as_killable(cluster, self.kind).kill(op.target)

    def heal(self, cluster: object, op: FaultOp) -> None:
        if op.params.get("host"):  # links first: a failed start leaves no link cut
            set_node_links(cluster, self.kind, op.target, True)
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
