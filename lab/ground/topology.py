"""Links and their proxies: one Toxiproxy proxy on every client→node and node→node link.

Link names are what faults target: `client_to_n1` (clients reaching n1) and
`n1_to_n2` (n1 dialling n2; a partition cuts both directions).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

__all__ = [
    "Link",
    "client_link",
    "links_for",
    "node_link",
    "partition_links",
    "split_node_link",
]


@dataclass(frozen=True)
class Link:
    name: str
    source: str  # "client" or a node name
    dest: str  # the node the link reaches

    @property
    def is_client(self) -> bool:
        return self.source == "client"


def client_link(node: str) -> str:
    return f"client_to_{node}"


def node_link(source: str, dest: str) -> str:
    return f"{source}_to_{dest}"


def links_for(
    nodes: tuple[str, ...], peer_links: bool = True, witnesses: tuple[str, ...] = ()
) -> tuple[Link, ...]:
    """Every client→node link, and every node→node link when `peer_links` (a target whose
    nodes dial their peers through the proxies the lab gives them), with the `witnesses`
    (brokers a target runs beside the group: peer links only, no client reaches them)."""
    client = tuple(Link(client_link(n), "client", n) for n in nodes)
    if not peer_links:
        return client
    every = (*nodes, *witnesses)
    peer = tuple(Link(node_link(a, b), a, b) for a, b in permutations(every, 2))
    return client + peer


def split_node_link(name: str) -> tuple[str, str] | None:
    """(source, dest) of a node→node link name `n1_to_n2`; None for a client link."""
    source, sep, dest = name.partition("_to_")
    if not sep or source == "client":
        return None
    return source, dest


def partition_links(side_a: tuple[str, ...], side_b: tuple[str, ...]) -> tuple[str, ...]:
    """The node→node links to cut so that no node of one side reaches the other."""
    return tuple(node_link(a, b) for a in side_a for b in side_b) + tuple(
        node_link(b, a) for a in side_a for b in side_b
    )
