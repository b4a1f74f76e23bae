"""Who may stand, who gets a vote, and how many votes win: the group's replaceable election.

`SelfElection` is the Java broker's (BDB JE) rule set from the seeds: the node
with the most recent transaction wins; priority breaks ties; a node of
priority 0 (Never) never stands but still votes; a majority of votes is needed,
or `quorum_override` when set, or one for a designated primary in a group of two.
The C++ broker's model (no self-election: a cluster manager promotes a ready
backup) is another implementation of the same protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Ballot", "Election", "SelfElection", "Voter", "majority"]


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
