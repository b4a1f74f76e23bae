"""The state every part of a node's group membership shares, and what the group asks of the
reactor thread (`StoreSide`).

The group thread owns `GroupCore`: the term and the vote in it (saved before acting on
them), this node's role, the master it follows, the peer network. The parts (contact,
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
from broker_ref.oplog import OperationalLog
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
        return self.config.group_size

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
            **extra,
        }
