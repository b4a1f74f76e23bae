"""Who is in the group: the members whose votes and acknowledgements count, and the names
removed from it for good (Broker-J's HA chapter, "Node Operations": a node is added
through an existing one, and "the names of deleted virtualhost node cannot be reused
within a group").

A membership is a numbered version made in a term. A group starts at version 0 with the
configured `members`; the master makes every change (a node admitted, a node removed), one
version at a time, saves it before it acts on it and tells every node in its heartbeat; a
node takes any newer one it hears of — a later term's first, then a higher version — and
saves it the same way, so a restarted node remembers the group it left and a removed one
learns it is out. (A master that made a change and died before telling anyone is
outranked by what the next master, of a later term, decides.)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker_ref.errors import StoreError

__all__ = ["Membership", "load_membership", "save_membership"]

FILE_NAME = "membership.json"


@dataclass(frozen=True)
class Membership:
    version: int
    members: tuple[str, ...]
    removed: tuple[str, ...] = ()
    term: int = 0  # the term of the master that made it

    def newer_than(self, other: Membership) -> bool:
        return (self.term, self.version) > (other.term, other.version)

    def admit(self, name: str, term: int) -> Membership:
        """With `name` a member too, made by the master of `term`."""
        if name in self.removed:
            raise ValueError(f"node '{name}' was removed from the group; its name cannot be reused")
        if name in self.members:
            return self
        members = tuple(sorted((*self.members, name)))
        return Membership(self.version + 1, members, self.removed, term)

    def remove(self, name: str, term: int) -> Membership:
        """Without `name`, for good, made by the master of `term`."""
        if name not in self.members:
            raise KeyError(name)
        members = tuple(m for m in self.members if m != name)
        return Membership(self.version + 1, members, tuple(sorted((*self.removed, name))), term)

    def message(self) -> dict[str, Any]:
        """As it travels in a heartbeat (and is saved)."""
        return {
            "version": self.version,
            "term": self.term,
            "members": list(self.members),
            "removed": list(self.removed),
        }

    @staticmethod
    def parse(raw: object) -> Membership | None:
        """A membership from a peer's heartbeat or the saved file; None if it is not one."""
        if not isinstance(raw, dict):
            return None
        version, members, removed = raw.get("version"), raw.get("members"), raw.get("removed", [])
        term = raw.get("term", 0)
        if (
            not isinstance(version, int)
            or not isinstance(term, int)
            or any(isinstance(n, bool) or n < 0 for n in (version, term))
            or not isinstance(members, list)
            or not isinstance(removed, list)
            or not all(isinstance(n, str) for n in (*members, *removed))
        ):
            return None
        return Membership(version, tuple(members), tuple(removed), term)


def load_membership(data_dir: Path, initial: Membership) -> Membership:
    """The saved membership, or `initial` when the node never saved one (a new node)."""
    path = data_dir / FILE_NAME
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return initial
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read {path}: {exc}") from exc
    saved = Membership.parse(raw)
    if saved is None:
        raise StoreError(f"cannot read {path}: not a membership: {raw!r}"[:300])
    return saved


def save_membership(data_dir: Path, membership: Membership) -> None:
    """Write the membership durably (temp file, fsync, rename) before acting on it."""
    path = data_dir / FILE_NAME
    tmp = path.with_name(FILE_NAME + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, json.dumps(membership.message()).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
