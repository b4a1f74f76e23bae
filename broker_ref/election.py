"""Elections in a replicated group: the rules (who may stand, who gets a vote, how many votes
win) and the protocol that runs them.

`SelfElection` is the Java broker's (BDB JE) rule set from the seeds: the node with the
most recent transaction wins; priority breaks ties; a node of priority 0 (Never) never
stands but still votes; a majority of votes is needed, or `quorum_override` when set, or
one for a designated primary in a group of two. The rules are one replaceable part
(`Election`).

`Elections` runs them: a node with no live master first asks whether the others would
vote for it (a pre-vote, so that a node rejoining after an absence does not depose a
working master by raising the term), then stands: term + 1, a vote for itself, a vote
request to every peer. Candidates are staggered by name as well as by chance, so two
rarely stand at once and split the vote. A master keeps its mastership while it hears
from enough nodes to win an election (its lease).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from broker_ref.contact import Contact
from broker_ref.group_core import GroupCore
from broker_ref.oplog import Code
from broker_ref.roles import Role

__all__ = [
    "Ballot",
    "Election",
    "Elections",
    "OperatorSettings",
    "SelfElection",
    "Voter",
    "majority",
]


def majority(group_size: int) -> int:
    return group_size // 2 + 1


@dataclass(frozen=True)
class Ballot:
    """A candidate's request for votes."""

    candidate: str
    term: int
    last_txid: int
    last_term: int
    priority: int
    transfer: bool = False  # asked for by the master handing over (transfer master)


@dataclass(frozen=True)
class Voter:
    """What a node knows when it is asked for its vote, or decides whether to stand."""

    name: str
    last_txid: int
    last_term: int
    priority: int
    group_size: int
    quorum_override: int
    designated_primary: bool
    master_recently_seen: bool


class Election(Protocol):
    def may_stand(self, me: Voter) -> bool:
        """Whether this node may put itself forward when it has no master."""
        ...

    def grants(self, me: Voter, ballot: Ballot) -> bool:
        """Whether this node votes for `ballot` (terms and one-vote-per-term are checked first)."""
        ...

    def votes_needed(self, me: Voter) -> int:
        """How many votes, its own included, a candidate needs."""
        ...


class SelfElection:
    def may_stand(self, me: Voter) -> bool:
        return me.priority > 0

    def grants(self, me: Voter, ballot: Ballot) -> bool:
        if me.master_recently_seen and not ballot.transfer:
            return False  # a live master is not deposed by a node that lost touch with it
        if me.priority == 0:
            return True  # Never: votes, but does not hold out for itself
        mine = (me.last_term, me.last_txid)
        theirs = (ballot.last_term, ballot.last_txid)
        if ballot.transfer:
            return theirs >= mine  # the operator chose this node: priority does not count
        if mine != theirs:
            return theirs > mine
        return ballot.priority >= me.priority

    def votes_needed(self, me: Voter) -> int:
        if me.quorum_override:
            return me.quorum_override
        if me.designated_primary and me.group_size == 2:
            return 1
        return majority(me.group_size)


@dataclass
class OperatorSettings:
    """The node attributes an operator may change at run time (effective immediately)."""

    priority: int
    designated_primary: bool
    quorum_override: int


class Elections:
    """Group thread only. `on_win` makes this node the master; `on_newer_term` steps a
    master down when a newer term exists."""

    def __init__(
        self,
        core: GroupCore,
        contact: Contact,
        settings: OperatorSettings,
        rules: Election | None = None,
    ) -> None:
        self._core = core
        self._contact = contact
        self.settings = settings
        self._rules: Election = rules or SelfElection()
        self._rng = random.Random()
        self._rank = sorted((core.name, *core.peers)).index(core.name)
        self._votes: set[str] = set()
        self._standing_term = 0
        self._prevotes: set[str] = set()
        self._prevote_term = 0
        self.due = self.next_time(time.monotonic())
        self.on_win: Callable[[], None] = lambda: None
        self.on_newer_term: Callable[[int], None] = lambda term: None
        self.on_stand: Callable[[], None] = lambda: None  # this node stopped following

    def voter(self, now: float) -> Voter:
        core = self._core
        settings = self.settings
        return Voter(
            name=core.name,
            last_txid=core.frames.last_txid,
            last_term=core.frames.last_term(),
            priority=settings.priority,
            group_size=core.size,
            quorum_override=settings.quorum_override,
            designated_primary=settings.designated_primary,
            master_recently_seen=(
                core.master is not None
                and core.master != core.name
                and now - core.master_seen < core.config.election_timeout_s
            ),
        )

    def votes_needed(self, now: float) -> int:
        return self._rules.votes_needed(self.voter(now))

    def _timeout(self) -> float:
        """The election timeout, shorter for a node of higher priority."""
        speed = {3: 0.6, 2: 0.8}.get(self.settings.priority, 1.0)
        return self._core.config.election_timeout_s * speed

    def next_time(self, now: float, soon: bool = False) -> float:
        """When to stand next if no master appears."""
        base = self._timeout()
        stagger = 0.5 * self._rank
        if soon:
            return now + base * 0.5 * (stagger + self._rng.random())
        return now + base * (1.0 + stagger + 0.5 * self._rng.random())

    def first_time(self, now: float) -> float:
        """When a node of a new group stands once a majority has met: the first node by
        name at once, each next one half a timeout later, so the first master is the one
        it was when every node waited a whole timeout (a seed's schedule meets the same
        first master), even when the nodes found each other a little apart."""
        return now + self._timeout() * (0.5 * self._rank + 0.1 * self._rng.random())

    def has_lease(self) -> bool:
        """Whether this node hears from enough nodes to have won an election now."""
        members = sum(1 for peer in self._contact.in_contact if self._core.counts(peer))
        return 1 + members >= self.votes_needed(time.monotonic())

    def maybe_stand(self, now: float, transfer: bool = False) -> None:
        """Stand for election; unless asked by a transfer, after a pre-vote."""
        core = self._core
        if not core.is_member:
            return  # a newcomer waits to be admitted; a removed node never stands
        me = self.voter(now)
        if not transfer and (me.master_recently_seen or not self._rules.may_stand(me)):
            return
        if transfer:
            self._stand(me, transfer=True)
            return
        self._prevote_term = core.term + 1
        self._prevotes = {core.name}
        core.broadcast(
            {
                "type": "pre_vote",
                "term": self._prevote_term,
                "last_txid": me.last_txid,
                "last_term": me.last_term,
                "priority": me.priority,
            }
        )
        self._count_prevotes()

    def on_pre_vote(self, peer: str, msg: dict[str, Any]) -> None:
        """Would this node vote for `peer` in the term it proposes? Changes nothing here."""
        core = self._core
        term = int(msg["term"])
        ballot = Ballot(
            candidate=peer,
            term=term,
            last_txid=int(msg["last_txid"]),
            last_term=int(msg["last_term"]),
            priority=int(msg["priority"]),
        )
        now = time.monotonic()
        granted = (
            term > core.term
            and core.is_member
            and core.counts(peer)
            and not (core.role is Role.MASTER and self.has_lease())
            and self._rules.grants(self.voter(now), ballot)
        )
        if granted:  # give that candidate time to win before standing ourselves
            self.due = max(self.due, self.next_time(now))
        core.net.send(peer, {"type": "pre_vote_reply", "term": term, "granted": granted})

    def on_pre_vote_reply(self, peer: str, msg: dict[str, Any]) -> None:
        if int(msg["term"]) == self._prevote_term and msg.get("granted"):
            self._prevotes.add(peer)
            self._count_prevotes()

    def _count_prevotes(self) -> None:
        core = self._core
        if self._prevote_term != core.term + 1 or core.role is Role.MASTER:
            return
        me = self.voter(time.monotonic())
        if sum(map(core.counts, self._prevotes)) >= self._rules.votes_needed(me):
            self._prevote_term = 0
            self._stand(me, transfer=False)

    def _stand(self, me: Voter, transfer: bool) -> None:
        core = self._core
        core.set_term(core.term + 1, core.name)
        core.oplog.info(
            Code.ELECTION,
            f"Election : standing in term {core.term} with transaction {me.last_txid}"
            f" (term {me.last_term}){' for a master transfer' if transfer else ''}",
        )
        self._standing_term = core.term
        self._votes = {core.name}
        if core.role is not Role.WAITING:
            core.set_role(Role.WAITING, "standing for election")
        core.master = None
        self.on_stand()
        core.broadcast(
            {
                "type": "vote_request",
                "term": core.term,
                "last_txid": me.last_txid,
                "last_term": me.last_term,
                "priority": me.priority,
                "transfer": transfer,
            }
        )
        self._count_votes()

    def _count_votes(self) -> None:
        core = self._core
        if self._standing_term != core.term or core.role is Role.MASTER:
            return
        if sum(map(core.counts, self._votes)) >= self.votes_needed(time.monotonic()):
            self.on_win()

    def on_vote_request(self, peer: str, msg: dict[str, Any]) -> None:
        core = self._core
        term = int(msg["term"])
        if term > core.term:
            self.on_newer_term(term)
        granted = False
        if (
            term == core.term
            and core.voted_for in (None, peer)
            and core.role is not Role.MASTER
            and core.is_member
            and core.counts(peer)
        ):
            ballot = Ballot(
                candidate=peer,
                term=term,
                last_txid=int(msg["last_txid"]),
                last_term=int(msg["last_term"]),
                priority=int(msg["priority"]),
                transfer=bool(msg.get("transfer")),
            )
            granted = self._rules.grants(self.voter(time.monotonic()), ballot)
            if granted:
                core.set_term(core.term, peer)
                self.due = self.next_time(time.monotonic())
        core.net.send(peer, {"type": "vote", "term": core.term, "granted": granted})

    def on_vote(self, peer: str, msg: dict[str, Any]) -> None:
        term = int(msg["term"])
        if term > self._core.term:
            self.on_newer_term(term)
            return
        if term == self._core.term and msg.get("granted"):
            self._votes.add(peer)
            self._count_votes()
