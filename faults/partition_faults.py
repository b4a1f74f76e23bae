"""Network partitions between nodes: every node→node link across the cut, both directions,
or one direction only.

The cluster cuts a link where it can (its Toxiproxy proxy; for a target whose nodes
dial each other directly, the Docker backend's packet filter in the node).

    partition          target: a label (e.g. "group"); params.sides "n1|n2,n3": no node of
                       one side reaches a node of the other; nodes on neither side keep all
                       links
    isolate            target: a node; it reaches no other node and no other node reaches it
    one_way_partition  target: a label; params.sides "n1|n2,n3": what the first side sends
                       the second is blackholed, what the second sends the first flows

On the hosts backend a one-way partition is a packet filter (OneWayFiltered); elsewhere it
needs a Toxiproxy proxy on every node→node link (`<a>_to_<b>` is a's
connection to b: its upstream carries a's bytes to b, its downstream b's bytes to a). For a
on the first side and b on the second, a `timeout` toxic with timeout 0 (bytes dropped,
the connection kept open) goes on `a_to_b`'s upstream and on `b_to_a`'s downstream. Toxiproxy
drops those bytes out of the middle of a TCP stream, which TCP itself never does: the heal
removes the toxics and also closes the connections that lost bytes (the proxy disabled and
enabled again, as for a cut of an instant), so no node ever reads a stream with a hole in
it; the nodes dial again.

Clients keep their links (a client→node proxy is never cut here): a partitioned node
still answers the clients that reach it, as a node behind a broken backbone would.
The heal enables every proxy it disabled (a split's heal leaves its links enabled, so two
splits sharing a link should not overlap).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from faults.abilities import as_linked, as_proxied, as_roled
from faults.selectors import split_sides
from lab.ground.errors import UsageError
from lab.ground.faultops import FaultOp
from lab.ground.topology import node_link, partition_links

__all__ = [
    "Isolate",
    "OneWayPartition",
    "Partition",
    "isolate_links",
    "one_way_streams",
    "partition_sides",
    "set_node_links",
]


def partition_sides(op: FaultOp) -> tuple[tuple[str, ...], tuple[str, ...]]:
    sides = op.params.get("sides")
    if not isinstance(sides, str):
        raise UsageError(f"fault {op.id}: {op.fault} needs params.sides, e.g. 'n1|n2,n3'")
    return split_sides(sides)


def one_way_streams(
    senders: tuple[str, ...], receivers: tuple[str, ...]
) -> tuple[tuple[str, str], ...]:
    """The (link, stream) pairs that carry bytes from `senders` to `receivers`: each sender's
    own connection to a receiver (upstream) and each receiver's connection to a sender
    (downstream)."""
    return tuple(
        pair
        for a in senders
        for b in receivers
        for pair in ((node_link(a, b), "upstream"), (node_link(b, a), "downstream"))
    )


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


def set_node_links(cluster: object, kind: str, node: str, enabled: bool) -> None:
    """Cut (or restore) every link between `node` and the other nodes: an isolation."""
    _set_links(cluster, kind, isolate_links(node, as_roled(cluster, kind).node_names), enabled)


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

    def apply(self, cluster: object, op: FaultOp) -> None:
        set_node_links(cluster, self.kind, op.target, False)

    def heal(self, cluster: object, op: FaultOp) -> None:
        set_node_links(cluster, self.kind, op.target, True)


@runtime_checkable
class OneWayFiltered(Protocol):
    """A cluster that drops one direction between nodes with packet filters (the hosts
    backend: what the senders send the receivers is dropped on both hosts; TCP then stalls
    both ways, as behind a real one-way fault)."""

    one_way_filters: bool

    def set_one_way(
        self, senders: tuple[str, ...], receivers: tuple[str, ...], enabled: bool
    ) -> None: ...


def _filtered(cluster: object) -> OneWayFiltered | None:
    if isinstance(cluster, OneWayFiltered) and cluster.one_way_filters:
        return cluster
    return None


class OneWayPartition:
    """Bytes from the first side to the second blackholed; the other direction flows."""

    kind = "one_way_partition"
    toxic_type = "timeout"

    def preflight(self, cluster: object, op: FaultOp) -> None:
        partition_sides(op)
        if _filtered(cluster) is not None:
            as_linked(cluster, self.kind).check_peer_links("cut")  # packet filters
            return
        as_linked(cluster, self.kind).check_peer_links("slow")  # toxics need the proxies

    def _streams(self, cluster: object, op: FaultOp) -> tuple[tuple[str, str], ...]:
        streams = one_way_streams(*partition_sides(op))
        proxied = as_proxied(cluster, self.kind)
        for link, _ in streams:
            proxied.require_proxy(link)  # every link known before any is touched
        return streams

    def apply(self, cluster: object, op: FaultOp) -> None:
        filtered = _filtered(cluster)
        if filtered is not None:
            filtered.set_one_way(*partition_sides(op), enabled=False)
            return
        streams = self._streams(cluster, op)
        client = as_proxied(cluster, self.kind).proxy_client()
        for link, stream in streams:
            client.add_toxic(link, f"{op.id}_{stream}", self.toxic_type, stream, {"timeout": 0})

    def heal(self, cluster: object, op: FaultOp) -> None:
        filtered = _filtered(cluster)
        if filtered is not None:
            filtered.set_one_way(*partition_sides(op), enabled=True)
            return
        streams = self._streams(cluster, op)
        client = as_proxied(cluster, self.kind).proxy_client()
        linked = as_linked(cluster, self.kind)
        for link, stream in streams:
            linked.set_link(link, False)  # the connections that lost bytes are closed
            client.remove_toxic(link, f"{op.id}_{stream}")
            linked.set_link(link, True)
