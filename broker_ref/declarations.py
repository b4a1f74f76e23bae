"""Queues declared on first use, each with its replication level.

A queue is declared (a DECLARE record) when a link first names it. In an active-passive
cluster a producer may give the queue's replication level when it is created, as
`qpid.replicate` among the node properties of its link's target (the terminus'
dynamic-node-properties, where the C++ broker reads it over AMQP 1.0): none, configuration
or all; without it the broker's `ha_replicate` applies. `lab ha replicate` changes a
queue's level for what follows (a DECLARE record carrying the new level). Reactor thread.
"""

from __future__ import annotations

from proton import Delivery, Link

from broker_ref.commit import GroupCommit
from broker_ref.commit_path import CommitPath
from broker_ref.errors import ChangeRefused
from broker_ref.oplog import Code, OperationalLog
from broker_ref.queues import Queue, QueueBook
from broker_ref.records import Declare
from broker_ref.roles import Role, RoleTracker

__all__ = ["Declarations", "replication_level"]


class Declarations:
    def __init__(
        self,
        queues: QueueBook,
        commit: GroupCommit[Delivery],
        commit_path: CommitPath,
        roles: RoleTracker,
        oplog: OperationalLog,
    ) -> None:
        self._queues = queues
        self._commit = commit
        self._commit_path = commit_path
        self._roles = roles
        self._oplog = oplog

    def _record(self, name: str, replicate: str | None) -> Declare:
        return Declare(self._commit.next_txid, name, self._commit.term, replicate)

    def declare(self, name: str, replicate: str | None = None) -> Queue:
        """The queue `name`, declared (a DECLARE record) on first use; its replication level
        is the one given then, as `qpid.replicate` is in the C++ broker."""
        queue = self._queues.get(name)
        if queue is None:
            queue = self._queues.add(name, replicate)
            self._commit_path.stage(self._record(name, replicate), None)
        return queue

    def set_replication(self, name: str, level: str) -> None:
        """Declare `name` with this replication level, or change an existing queue's for
        what follows (a DECLARE record with the new level); only the primary does."""
        if self._roles.current is not Role.MASTER:
            raise ChangeRefused("only the primary sets a queue's replication")
        queue = self._queues.get(name) or self._queues.add(name)
        queue.replicate = level
        self._commit_path.stage(self._record(name, level), None)
        self._oplog.info(Code.HA_REPLICATION, f"Queue replication : '{name}' replicate {level}")


def replication_level(link: Link) -> str | None:
    """`qpid.replicate` among the node properties of a producer's target (the terminus'
    dynamic-node-properties, where the C++ broker reads it over AMQP 1.0); None if absent."""
    data = link.remote_target.properties
    data.rewind()
    if not data.next():
        return None
    found = data.get_object()
    if not isinstance(found, dict):
        return None
    level = found.get("qpid.replicate")
    return None if level is None else str(level)
