"""Network partitions between nodes: every node→node link across the cut, both directions.

The cluster cuts a link where it can (its Toxiproxy proxy; for a target whose nodes
dial each other directly, the Docker backend's packet filter in the node).

    partition   target: a label (e.g. "group"); params.sides "n1|n2,n3": no node of one
                side reaches a node of the other; nodes on neither side keep all links
    isolate     target: a node; it reaches no other node and no other node reaches it

Clients keep their links (a client→node proxy is never cut here): a partitioned node
still answers the clients that reach it, as a node behind a broken backbone would.
The heal enables every proxy it disabled.
"""

from __future__ import annotations

from faults.abilities import as_linked, as_roled
from faults.selectors import split_sides
from lab.ground.errors import UsageError
from lab.ground.faultops import FaultOp
from lab.ground.topology import partition_links

__all__ = ["Isolate", "Partition", "isolate_links", "partition_sides"]


def partition_sides(op: FaultOp) -> tuple[tuple[str, ...], tuple[str, ...]]:
    sides = op.params.get("sides")
    if not isinstance(sides, str):
        raise UsageError(f"fault {op.id}: partition needs params.sides, e.g. 'n1|n2,n3'")
    return split_sides(sides)


def isolate_links(node: str, nodes: tuple[str, ...]) -> tuple[str, ...]:
    others = tuple(n for n in nodes if n != node)
    if len(others) == len(nodes):
        raise UsageError(f"no node named {node!r} (nodes: {', '.join(nodes)})")
    return partition_links((node,), others) if others else ()


def _set_links(cluster: object, kind: str, links: tuple[str, ...], enabled: bool) -> None:
    linked = as_linked(cluster, kind)
    for link in links:
        linked.require_link(link)  # every link known before any is touched
    for link in links:
        linked.set_link(link, enabled)


class Partition:
    kind = "partition"

    def preflight(self, cluster: object, op: FaultOp) -> None:
        as_linked(cluster, self.kind).check_peer_links("cut")

    def _links(self, op: FaultOp) -> tuple[str, ...]:
        return partition_links(*partition_sides(op))

    def apply(self, cluster: object, op: FaultOp) -> None:
        _set_links(cluster, self.kind, self._links(op), False)

    def heal(self, cluster: object, op: FaultOp) -> None:
        _set_links(cluster, self.kind, self._links(op), True)


class Isolate:
    kind = "isolate"

    def preflight(self, cluster: object, op: FaultOp) -> None:
        as_linked(cluster, self.kind).check_peer_links("cut")

    def _links(self, cluster: object, op: FaultOp) -> tuple[str, ...]:
        return isolate_links(op.target, as_roled(cluster, self.kind).node_names)

    def apply(self, cluster: object, op: FaultOp) -> None:
        _set_links(cluster, self.kind, self._links(cluster, op), False)

    def heal(self, cluster: object, op: FaultOp) -> None:
        _set_links(cluster, self.kind, self._links(cluster, op), True)
