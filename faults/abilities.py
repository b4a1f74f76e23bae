"""What a cluster can have done to it: each optional ability its own small protocol.

The cluster a fault acts on offers optional abilities (Jepsen's `db/Kill`, `db/Pause`):
`Killable` (kill -9, restart), `Stoppable` (a graceful stop, start), `Pausable`
(SIGSTOP/SIGCONT), `Proxied` (the Toxiproxy proxy on each link), `Roled` (each node's
role can be read: what `@master` / `@replica:2` targets resolve against), `Reporting`
(each node's status, with its last transaction id, can be read), `Managed` (a management
API client per node: operator faults), `Joinable` (a spare node started to join the running
group) and `Removable` (a node stopped and removed from the group for good). A fault checks
the ability it needs, with `require_ability` or one of the `as_*` helpers, and says in one
line what it needs.

The clients behind `Proxied` and `Managed` are protocols too (`ProxyControl`,
`NodeManagement`): what a fault asks of Toxiproxy or of a node's management API,
whichever backend or target answers it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from lab.ground.errors import ClusterError
from lab.ground.nodes import NodeStatus

__all__ = [
    "Collectable",
    "Joinable",
    "Killable",
    "Linked",
    "Managed",
    "NodeManagement",
    "Pausable",
    "Proxied",
    "ProxyControl",
    "Removable",
    "Reporting",
    "Roled",
    "Stoppable",
    "as_collectable",
    "as_joinable",
    "as_killable",
    "as_linked",
    "as_managed",
    "as_pausable",
    "as_proxied",
    "as_removable",
    "as_roled",
    "as_stoppable",
    "require_ability",
]


class ProxyControl(Protocol):
    """What toxics need of Toxiproxy's API."""

    def add_toxic(
        self, proxy_name: str, toxic: str, kind: str, stream: str, attributes: dict[str, int]
    ) -> None: ...

    def remove_toxic(self, proxy_name: str, toxic: str) -> None:
        """Remove a toxic; one that is already gone is fine."""
        ...


class NodeManagement(Protocol):
    """What operator faults need of a node's management API."""

    def node_attributes(self) -> dict[str, Any]: ...

    def set_attributes(self, **attributes: Any) -> None: ...

    def ha_action(self, **request: Any) -> None:
        """An active-passive broker's HA request: promote, replicate."""
        ...


@runtime_checkable
class Killable(Protocol):
    def kill(self, name: str) -> None: ...

    def restart(self, name: str) -> None: ...


@runtime_checkable
class Stoppable(Protocol):
    """A node stopped as an operator stops it (SIGTERM: it closes its clients and leaves
    the group), and started again on the same ports and data."""

    def stop_node(self, name: str) -> None: ...

    def restart(self, name: str) -> None: ...


@runtime_checkable
class Joinable(Protocol):
    """A node added to the running group (the seeds' "adding nodes to an existing group"):
    a spare, planned but never started, is started and joins through its helper; a node
    removed earlier is started again (the group refuses its name)."""

    def add_node(self, name: str) -> None: ...


@runtime_checkable
class Removable(Protocol):
    """A node removed from the group for good (the seeds' *delete*): stopped as an operator
    stops it, then removed by the master through its management API."""

    def remove_node(self, name: str) -> None: ...

    def removed_nodes(self) -> tuple[str, ...]:
        """The nodes removed so far, in the order they were removed."""
        ...


@runtime_checkable
class Pausable(Protocol):
    def pause(self, name: str) -> None: ...

    def resume(self, name: str) -> None: ...


@runtime_checkable
class Collectable(Protocol):
    def full_gc(self, name: str) -> None: ...


@runtime_checkable
class Proxied(Protocol):
    def proxy_client(self) -> ProxyControl: ...

    def require_proxy(self, name: str) -> str: ...


@runtime_checkable
class Linked(Protocol):
    def require_link(self, name: str) -> str: ...

    def check_peer_links(self, how: str) -> None:
        """Raise when node→node links cannot be `cut` (or `slow`ed) on this cluster."""
        ...

    def set_link(self, name: str, enabled: bool) -> None:
        """Cut (False) or restore (True) the link `name` (`n1_to_n2`, `client_to_n1`)."""
        ...


@runtime_checkable
class Roled(Protocol):
    @property
    def node_names(self) -> tuple[str, ...]: ...

    def roles(self) -> Mapping[str, str | None]:
        """Each node's role now (MASTER, REPLICA, …); None for a node that does not answer."""
        ...


@runtime_checkable
class Reporting(Protocol):
    def statuses(self) -> Mapping[str, NodeStatus | None]:
        """Each node's status now (role, last transaction id, …); None: it does not answer."""
        ...


@runtime_checkable
class Managed(Protocol):
    def management(self, name: str) -> NodeManagement:
        """A client for the management API of node `name`."""
        ...


def require_ability(cluster: object, ability: type, kind: str, needs: str) -> Any:
    """`cluster` when it has `ability` (a runtime-checkable protocol); else a ClusterError
    saying what fault `kind` needs (`needs` completes "needs a cluster …")."""
    if not isinstance(cluster, ability):
        raise ClusterError(f"fault {kind!r} needs a cluster {needs}")
    return cluster


def as_killable(cluster: object, kind: str) -> Killable:
    return require_ability(cluster, Killable, kind, "whose nodes can be killed")


def as_stoppable(cluster: object, kind: str) -> Stoppable:
    return require_ability(cluster, Stoppable, kind, "whose nodes can be stopped gracefully")


def as_joinable(cluster: object, kind: str) -> Joinable:
    return require_ability(cluster, Joinable, kind, "whose group takes new nodes")


def as_removable(cluster: object, kind: str) -> Removable:
    return require_ability(cluster, Removable, kind, "whose nodes can be removed from the group")


def as_pausable(cluster: object, kind: str) -> Pausable:
    return require_ability(cluster, Pausable, kind, "whose nodes can be paused")


def as_collectable(cluster: object, kind: str) -> Collectable:
    return require_ability(cluster, Collectable, kind, "that can run a full GC in a node")


def as_linked(cluster: object, kind: str) -> Linked:
    return require_ability(cluster, Linked, kind, "whose links can be cut")


def as_proxied(cluster: object, kind: str) -> Proxied:
    return require_ability(cluster, Proxied, kind, "with Toxiproxy on its links")


def as_roled(cluster: object, kind: str) -> Roled:
    return require_ability(cluster, Roled, kind, "whose nodes report their roles")


def as_managed(cluster: object, kind: str) -> Managed:
    return require_ability(cluster, Managed, kind, "with a management API on its nodes")
