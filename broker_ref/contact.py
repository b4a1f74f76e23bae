"""Who a node is in contact with: when each peer was last heard, who is alive, how long a
peer was away, and whether this node itself stood still (a full-GC-like stall).

A peer is alive while its last message is younger than `timeout_s`; it joins (HA-1005)
when it becomes alive and leaves (HA-1006) when it stops being. How long it was away
decides, when it asks to sync, between catching up and a full copy.
"""

from __future__ import annotations

from typing import Any

from broker_ref.oplog import Code, OperationalLog

__all__ = ["STALL_FACTOR", "Contact"]

# A node whose own loop stood still this many timeouts counts as stalled (a full GC,
# SIGSTOP); shorter hiccups (a busy machine) do not.
STALL_FACTOR = 3.0


class Contact:
    """Used from the group thread only."""

    def __init__(
        self, peers: tuple[str, ...], timeout_s: float, oplog: OperationalLog, now: float
    ) -> None:
        self._peers = peers
        self.timeout_s = timeout_s
        self._oplog = oplog
        self.seen: dict[str, float] = {}
        self.info: dict[str, dict[str, Any]] = {}  # each peer's last status message
        self.in_contact: set[str] = set()
        self._absent_since: dict[str, float] = {}
        self._away_for: dict[str, float] = {}
        self._last_alive = now

    def heard(self, peer: str, now: float) -> None:
        self.seen[peer] = now

    def alive(self, peer: str, now: float) -> bool:
        seen = self.seen.get(peer)
        return seen is not None and now - seen < self.timeout_s

    def stall(self, now: float) -> float | None:
        """How long this node stood still since it last looked, when that is a stall;
        then it has heard from nobody (what peers sent meanwhile is dropped)."""
        gap = now - self._last_alive
        self._last_alive = now
        if gap <= STALL_FACTOR * self.timeout_s:
            return None
        self.seen.clear()
        return gap

    def update(self, now: float) -> list[str]:
        """Log who joined and who left since last time; return the peers that left."""
        left: list[str] = []
        for peer in self._peers:
            alive = self.alive(peer, now)
            if alive and peer not in self.in_contact:
                self.in_contact.add(peer)
                since = self._absent_since.pop(peer, None)
                self._away_for[peer] = 0.0 if since is None else now - since
                self._oplog.info(Code.NODE_JOINED, f"Joined : Node : '{peer}'")
            elif not alive and peer in self.in_contact:
                self.in_contact.discard(peer)
                seen = self.seen.get(peer)
                self._absent_since[peer] = seen if seen is not None else now
                self._oplog.info(Code.NODE_LEFT, f"Left : Node : '{peer}'")
                left.append(peer)
        return left

    def away(self, peer: str, now: float) -> float:
        """How long `peer` was out of contact before it last came back (or so far)."""
        absent = self._absent_since.get(peer)
        return self._away_for.pop(peer, 0.0) if absent is None else now - absent
