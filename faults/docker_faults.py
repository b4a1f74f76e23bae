"""Faults that need a cluster's own abilities: a full disk, and a node cut off its network.

Each needs its ability (`DiskFillable`, `Disconnectable`): the Docker backend has both;
the process backend can fill a disk when the run mounted size-limited ones (as root), and
cannot disconnect a node. Both heals are idempotent.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from faults.abilities import require_ability
from lab.ground.faultops import FaultOp

__all__ = ["Disconnect", "Disconnectable", "DiskFill", "DiskFillable"]


@runtime_checkable
class DiskFillable(Protocol):
    def fill_disk(self, name: str) -> int:
        """Fill the node's data filesystem to ENOSPC with one file; return the bytes written."""
        ...

    def free_disk(self, name: str) -> None:
        """Delete that file; nothing to do when there is none."""
        ...


@runtime_checkable
class Disconnectable(Protocol):
    def disconnect(self, name: str) -> None:
        """Take the node off the network its peers and Toxiproxy reach it on."""
        ...

    def reconnect(self, name: str) -> None:
        """Put it back under its own name; nothing to do when it is connected."""
        ...


def _as_disk_fillable(cluster: object, kind: str) -> DiskFillable:
    return require_ability(
        cluster, DiskFillable, kind, "whose disks can be filled (docker, or processes as root)"
    )


def _as_disconnectable(cluster: object, kind: str) -> Disconnectable:
    return require_ability(cluster, Disconnectable, kind, "on a Docker network (docker)")


class DiskFill:
    """Fill the node's data disk (a size-limited tmpfs) until writes fail with ENOSPC;
    the heal deletes the fill file, so space returns."""

    kind = "disk_fill"

    def apply(self, cluster: object, op: FaultOp) -> None:
        _as_disk_fillable(cluster, self.kind).fill_disk(op.target)

    def heal(self, cluster: object, op: FaultOp) -> None:
        _as_disk_fillable(cluster, self.kind).free_disk(op.target)


class Disconnect:
    """`docker network disconnect` the node: a partition of one node from everyone,
    clients included (they reach it through Toxiproxy on that network); the heal
    connects it again."""

    kind = "disconnect"

    def apply(self, cluster: object, op: FaultOp) -> None:
        _as_disconnectable(cluster, self.kind).disconnect(op.target)

    def heal(self, cluster: object, op: FaultOp) -> None:
        _as_disconnectable(cluster, self.kind).reconnect(op.target)
