"""The replicated group's own rules (the Java broker's HA seeds): nodes elect their master.

Every heartbeat a node tells its peers its term, role, master and last transaction. A
master that hears from too few peers to win an election steps down (HA-1009); a node
with no live master stands for election when the rules let it (election.py); a node
that finds a master joins its stream (follower.py). A master's commit waits for the
acknowledgements the durability policy asks for; `designatedPrimary` lets one node of a
group of two work alone; both designated at start-up refuse to start.

The group's members change by the node operations of the seeds: a newcomer (a node left
out of the configured members) asks the master to admit it, and the master adds it if
it is a permitted node whose name was never removed; the master removes a stopped node
when the operator asks (management). Only members vote, stand and acknowledge commits
(membership.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from broker_ref.contact import Contact
from broker_ref.durability import AckPolicy
from broker_ref.election import Elections, OperatorSettings, majority
from broker_ref.feeds import Feeds
from broker_ref.follower import SYNC_RETRY_S, Follower
from broker_ref.group_core import GroupCore
from broker_ref.membership import Membership
from broker_ref.oplog import Code
from broker_ref.roles import Role
from broker_ref.transfer import Transfer

__all__ = ["SelfElected"]

JOIN_RETRY_S = 0.5  # a newcomer asks the master to admit it this often


class SelfElected:
    """Group thread only, but for `request_transfer` (any thread)."""

    def __init__(
        self,
        core: GroupCore,
        contact: Contact,
        feeds: Feeds,
        follower: Follower,
        on_fatal: Callable[[str], None],
    ) -> None:
        config = core.config
        self._core = core
        self._contact = contact
        self._feeds = feeds
        self._follower = follower
        self._on_fatal = on_fatal
        self.settings = OperatorSettings(
            config.priority, config.designated_primary, config.quorum_override
        )
        self.elections = Elections(core, contact, self.settings)
        self.elections.on_win = self._win
        self.elections.on_newer_term = self.adopt_term
        self.elections.on_stand = follower.forget
        self.transfer = Transfer(core, feeds)
        self.transfer.step_down = lambda reason: self.step_down(Role.REPLICA, reason)
        feeds.acked_by = self.transfer.on_ack
        self._joined = False  # met a peer at least once since start
        self._first_election = True  # a new group's first election may come early, once
        self._refusing: str | None = None
        self._refuse_at = 0.0
        self._join_asked = 0.0

    # ---- what the group asks of its mode -----------------------------------------------------

    def started(self, now: float) -> None:
        if self._core.removed:
            self._core.refuse_removed()
        elif self._core.size == 1 and self._core.is_member:
            self.elections.maybe_stand(now)  # a group of one needs no one's vote

    def full_copy(self, peer: str) -> bool:
        """A rejoining node gets a full copy only when it was away past the retention."""
        return False

    def tick(self, now: float) -> None:
        core = self._core
        follower = self._follower
        self._tell()
        if self._refusing is not None:
            if now >= self._refuse_at:
                self._on_fatal(self._refusing)
            return
        if not core.is_member:
            if not core.removed:
                self._ask_to_join(now)
            return
        if core.role is Role.MASTER:
            if not self.elections.has_lease():
                core.oplog.warn(Code.INSUFFICIENT_REPLICAS, "Insufficient replicas contactable")
                self.step_down(Role.WAITING, "insufficient replicas contactable")
            else:
                self.advance_commit()
            return
        if follower.synced is not None and core.master is not None:
            if now - core.master_seen > core.config.election_timeout_s:
                follower.forget()
                core.master = None
                core.set_role(Role.WAITING, "the master is out of contact")
                self.elections.due = self.elections.next_time(now, soon=True)
        elif core.master is not None and now - follower.sync_asked > SYNC_RETRY_S:
            follower.ask_sync(core.master)
        if self._first_election and core.term == 0 and self.elections.has_lease():
            # A new group (no term yet) elects its first master as soon as a majority has
            # met, in rank order, not a whole timeout later.
            self._first_election = False
            self.elections.due = min(self.elections.due, self.elections.first_time(now))
        if now >= self.elections.due:
            self.elections.due = self.elections.next_time(now)
            self.elections.maybe_stand(now)

    def on_stall(self, gap_s: float, now: float) -> None:
        reason = f"stalled for {gap_s:.1f} s"
        if self._core.role is Role.MASTER:
            self.step_down(Role.WAITING, reason)
        else:
            self._core.set_role(Role.WAITING, reason)
        self.elections.due = self.elections.next_time(now)

    def on_peer_left(self, peer: str) -> None:
        return None  # the lease (tick) decides what a master does with fewer peers

    def on_message(self, peer: str, kind: object, msg: dict[str, Any], now: float) -> None:
        """The messages of elections and transfers."""
        elections = self.elections
        if kind == "pre_vote":
            elections.on_pre_vote(peer, msg)
        elif kind == "pre_vote_reply":
            elections.on_pre_vote_reply(peer, msg)
        elif kind == "vote_request":
            elections.on_vote_request(peer, msg)
        elif kind == "vote":
            elections.on_vote(peer, msg)
        elif kind == "join":
            self._admit(peer)
        elif kind == "transfer_request":
            self.transfer.on_request(peer, msg)
        elif (
            kind == "transfer_go"
            and int(msg.get("term", 0)) == self._core.term
            and self._core.master in (peer, None)
        ):
            elections.maybe_stand(now, transfer=True)

    def on_status(self, peer: str, msg: dict[str, Any], term: int, now: float) -> None:
        core = self._core
        told = Membership.parse(msg.get("membership"))
        if told is not None and told.newer_than(core.membership):
            core.adopt_membership(told)
            self.advance_commit()
        if not core.is_member:
            if term > core.term:
                self.adopt_term(term)
            return
        if (
            not self._joined
            and core.size == 2
            and self.settings.designated_primary
            and msg.get("designated")
        ):
            if self._refusing is None:
                # Keep telling the peer for a moment, so that it refuses too; then stop.
                self._refusing = (
                    f"both nodes of the group are designated primary ('{core.name}' and "
                    f"'{peer}'): refusing to start, as the seeds say"
                )
                self._refuse_at = now + 3 * core.config.election_timeout_s
            return
        self._joined = True
        if term > core.term:
            self.adopt_term(term)
        if msg.get("role") != "MASTER" or term < core.term:
            return
        if core.role is Role.MASTER:
            return  # the same term cannot have two winners; the other side adopts a newer term
        core.master_seen = now
        follower = self._follower
        if core.master != peer:
            core.master = peer
            follower.forget()
            follower.ask_sync(peer)
        elif (
            follower.following(peer, term)
            and core.name not in msg.get("streams", ())
            and now - follower.synced_at > SYNC_RETRY_S
        ):
            follower.forget()  # the master gave up our stream: join it again
            follower.ask_sync(peer)

    # ---- the commit point ----------------------------------------------------------------------

    def acks_needed(self) -> int:
        """Replica acknowledgements a commit waits for, now."""
        core = self._core
        policy = core.config.durability.ack_policy
        if policy is AckPolicy.NONE or core.size == 1:
            return 0
        if self.settings.designated_primary and core.size == 2 and not self._contact.in_contact:
            return 0  # operating solo
        if policy is AckPolicy.ALL:
            return core.size - 1
        needed = self.settings.quorum_override or majority(core.size)
        return max(0, needed - 1)

    def advance_commit(self) -> None:
        if self._core.role is not Role.MASTER:
            return
        needed = self.acks_needed()
        last = self._core.frames.last_txid
        if needed == 0:
            through = last
        else:
            counted = self._feeds.streaming_acks().items()
            acks = sorted((a for p, a in counted if self._core.counts(p)), reverse=True)
            if len(acks) < needed:
                return
            through = min(acks[needed - 1], last)
        self._feeds.post(through)

    # ---- membership ----------------------------------------------------------------------------

    def _ask_to_join(self, now: float) -> None:
        """A newcomer asks the master it hears of to admit it, every JOIN_RETRY_S."""
        if now - self._join_asked < JOIN_RETRY_S:
            return
        contact = self._contact
        for peer, info in sorted(contact.info.items()):
            if info.get("role") == "MASTER" and contact.alive(peer, now):
                self._join_asked = now
                self._core.net.send(peer, {"type": "join", "term": self._core.term})
                return

    def _admit(self, peer: str) -> None:
        """The master adds a newcomer that is a permitted node and was never removed."""
        core = self._core
        membership = core.membership
        if (
            core.role is not Role.MASTER
            or peer in membership.members
            or peer in membership.removed
            or peer not in core.config.permitted_nodes
        ):
            return
        core.adopt_membership(membership.admit(peer, core.term))
        self._tell()

    def remove_member(self, name: str) -> tuple[int, str] | None:
        """The operator removes a stopped node (management, on the master); None when done,
        else the HTTP status and why not (JE refuses a master and an active node alike)."""
        core = self._core
        if core.role is not Role.MASTER:
            return 409, f"node '{core.name}' is not the master (the master is {core.master})"
        if name == core.name:
            return 409, "the master cannot remove itself: transfer mastership first"
        if name not in core.membership.members:
            return 404, f"node '{name}' is not a member of group '{core.config.group}'"
        if name in self._contact.in_contact:
            return 409, f"node '{name}' is active: stop it before removing it from the group"
        core.adopt_membership(core.membership.remove(name, core.term))
        self._feeds.give_up(name)
        self._tell()
        self.advance_commit()
        return None

    def _tell(self) -> None:
        core = self._core
        core.broadcast(
            core.status(
                streams=self._feeds.streaming(), designated=self.settings.designated_primary
            )
        )

    # ---- roles ---------------------------------------------------------------------------------

    def _win(self) -> None:
        core = self._core
        core.master = core.name
        self._feeds.open_all()
        self.transfer.to = None
        core.role = Role.MASTER
        core.store.become_master(core.term)
        core.broadcast(core.status())

    def step_down(self, role: Role, reason: str) -> None:
        core = self._core
        core.master = None
        self._feeds.close_all()
        self.transfer.to = None
        self.elections.due = self.elections.next_time(time.monotonic())
        core.set_role(role, reason)

    def adopt_term(self, term: int) -> None:
        """A newer term exists: forget the old vote; a master of an older term steps down."""
        core = self._core
        core.set_term(term, None)
        if core.role is Role.MASTER:
            self.step_down(Role.WAITING, f"a newer term {term} exists")
        self._follower.forget()

    # ---- operator actions ----------------------------------------------------------------------

    def request_transfer(self) -> str | None:
        return self.transfer.request()

    def set_attributes(self, changes: dict[str, Any]) -> None:
        """Apply validated attribute changes (called in the group thread)."""
        core = self._core
        settings = self.settings
        if "priority" in changes:
            settings.priority = int(changes["priority"])
            core.oplog.info(Code.PRIORITY, f"Priority : {settings.priority}")
        if "quorumOverride" in changes:
            settings.quorum_override = int(changes["quorumOverride"])
            size = settings.quorum_override or majority(core.size)
            core.oplog.info(Code.MINIMUM_GROUP_SIZE, f"Minimum group size : {size}")
        if "designatedPrimary" in changes:
            settings.designated_primary = bool(changes["designatedPrimary"])
            flag = "true" if settings.designated_primary else "false"
            core.oplog.info(Code.DESIGNATED_PRIMARY, f"Designated primary : {flag}")
        if core.role is not Role.MASTER:
            self.elections.due = min(self.elections.due, time.monotonic())
        self.advance_commit()
