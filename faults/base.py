"""Faults (Jepsen's nemeses): each a small object with `apply` and its `heal`.

The cluster a fault acts on offers optional abilities, each its own protocol:
`Killable` (kill -9, restart), `Pausable` (SIGSTOP/SIGCONT), `Proxied` (the
Toxiproxy proxy on each link). A fault checks the ability it needs.

Heals are idempotent: healing what is already healed does nothing harmful,
so every heal can run again in `finally`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from faults.ops import FaultOp
from lab.errors import ClusterError
from lab.toxiproxy_api import ToxiproxyClient

__all__ = ["Fault", "Killable", "Pausable", "Proxied", "as_killable", "as_pausable", "as_proxied"]


@runtime_checkable
class Killable(Protocol):
    def kill(self, name: str) -> None: ...

    def restart(self, name: str) -> None: ...


@runtime_checkable
class Pausable(Protocol):
    def pause(self, name: str) -> None: ...

    def resume(self, name: str) -> None: ...


@runtime_checkable
class Proxied(Protocol):
    def proxy_client(self) -> ToxiproxyClient: ...

    def require_link(self, name: str) -> str: ...


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


def as_killable(cluster: object, kind: str) -> Killable:
    if not isinstance(cluster, Killable):
        raise ClusterError(f"fault {kind!r} needs a cluster whose nodes can be killed")
    return cluster


def as_pausable(cluster: object, kind: str) -> Pausable:
    if not isinstance(cluster, Pausable):
        raise ClusterError(f"fault {kind!r} needs a cluster whose nodes can be paused")
    return cluster


def as_proxied(cluster: object, kind: str) -> Proxied:
    if not isinstance(cluster, Proxied):
        raise ClusterError(f"fault {kind!r} needs a cluster with Toxiproxy on its links")
    return cluster
