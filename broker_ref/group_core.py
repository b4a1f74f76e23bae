"""The state every part of a node's group membership shares, and what the group asks of the
reactor thread (`StoreSide`).

The group thread owns `GroupCore`: the term and the vote in it, the group's membership
(each saved before acting on it), this node's role, the master it follows, the peer
network. `peers` are every node this one can reach; `members` those whose votes and
acknowledgements count (membership.py). The parts (contact,
elections, the replication stream's two sides, transfer master, a mode's own rules) read
and change it from that thread only.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any, Protocol

from broker_ref.config import NodeConfig
from broker_ref.frame_log import FrameLog
from broker_ref.group_state import TermRecord, load_term, save_term
from broker_ref.membership import Membership, load_membership, save_membership
from broker_ref.oplog import Code, OperationalLog
from broker_ref.peer_network import PeerNetwork
from broker_ref.roles import Role

__all__ = ["GroupCore", "StoreSide"]


class StoreSide(Protocol):
    """What the group asks of the reactor thread; every call only posts work there."""

    def become_master(self, term: int) -> None: ...

    def become_follower(self, role: Role, reason: str) -> None: ...

    def apply(self, frames: list[bytes], done: Callable[[int], None]) -> None: ...

    def rollback(
        self, keep_through: int, restore: bool, master: str, done: Callable[[], None]
    ) -> None: ...

    def acked_through(self, txid: int) -> None: ...

    def suspend(self, done: Callable[[int], None]) -> None:
        """Stop taking work; `done(last txid)` once nothing more will be committed."""
        ...

    def abort_suspended(self) -> None: ...


class GroupCore:
    def __init__(
        self,
        config: NodeConfig,
        oplog: OperationalLog,
        frames: FrameLog,
        store: StoreSide,
        net: PeerNetwork,
        call: Callable[[Callable[[], object]], None],
    ) -> None:
        self.config = config
        self.oplog = oplog
        self.frames = frames
        self.store = store
        self.net = net
        self.call = call  # run an action in the group thread, from any thread
        saved = load_term(config.data_dir)
        self.term = saved.term
        self.voted_for = saved.voted_for
        first = Membership(0, config.members or (config.name, *config.peer_names))
        self.membership = load_membership(config.data_dir, first)
        self.role = Role.WAITING
        self.master: str | None = None
        self.master_seen = 0.0  # when the master was last heard
        # This process's run of the node: a peer that sees it change knows the node restarted.
        self.run_id = secrets.token_hex(6)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def peers(self) -> tuple[str, ...]:
        return self.config.peer_names

    @property
    def size(self) -> int:
        """How many members the group has (its quorum is counted from them)."""
        return len(self.membership.members)

    @property
    def is_member(self) -> bool:
        return self.name in self.membership.members

    @property
    def removed(self) -> bool:
        return self.name in self.membership.removed

    def counts(self, peer: str) -> bool:
        """Whether `peer`'s votes and acknowledgements count: it is a member."""
        return peer in self.membership.members

    def adopt_membership(self, new: Membership) -> None:
        """Save a newer membership before acting on it; log who was added and removed."""
        old = self.membership
        save_membership(self.config.data_dir, new)
        self.membership = new
        address = dict(self.config.peers)
        for name in sorted(set(new.members) - set(old.members)):
            where = address.get(name, "this node")
            self.oplog.info(Code.NODE_ADDED, f"Added : Node : '{name}' ({where})")
        for name in sorted(set(new.removed) - set(old.removed)):
            where = address.get(name, "this node")
            self.oplog.info(Code.NODE_REMOVED, f"Removed : Node : '{name}' ({where})")
        if self.removed and self.name not in old.removed:
            self.refuse_removed()

    def refuse_removed(self) -> None:
        """This node's name was removed from the group: it never takes part again."""
        self.oplog.warn(
            Code.REMOVED_FROM_GROUP,
            f"Removed from group : node '{self.name}' was removed from group "
            f"'{self.config.group}'; its name cannot be reused",
        )
        self.master = None
        self.set_role(Role.DETACHED, "removed from the group")

    def set_term(self, term: int, voted_for: str | None) -> None:
        """Save the term durably before acting on it."""
        save_term(self.config.data_dir, TermRecord(term, voted_for))
        self.term = term
        self.voted_for = voted_for

    def set_role(self, role: Role, reason: str) -> None:
        if role is self.role:
            return
        self.role = role
        self.store.become_follower(role, reason)

    def broadcast(self, header: dict[str, Any]) -> None:
        for peer in self.peers:
            self.net.send(peer, header)

    def status(self, **extra: Any) -> dict[str, Any]:
        """This node's heartbeat: its term, role, master and last transaction."""
        return {
            "type": "status",
            "term": self.term,
            "role": self.role.value,
            "master": self.master,
            "last_txid": self.frames.last_txid,
            "last_term": self.frames.last_term(),
            "run": self.run_id,
            "membership": self.membership.message(),
            **extra,
        }
