"""A RabbitMQ node's console lines as the lab reads them.

The lab has each node log one line per event, `<time> <LEVEL> [<node>] <text>`
(lab.targets.rabbitmq.config). RabbitMQ's lines carry no codes of their own; the events that
say what the cluster did are given codes here, each by the exact words RabbitMQ 3.10 writes.
Events the Java broker (and broker_ref) logs with a code of its own are read as that code,
so that the scenarios' predictions, which name them, are checked on RabbitMQ too:

    MST-1006  the queue's new leader, as a new master has recovered its store and serves: a
              quorum member elected ("candidate -> leader in term"), or a mirror promoted to
              master ("Promoting mirror … to leader")
    HA-1006   a peer left the cluster, as the node saw it ("rabbit on node … down")
    HA-1005   a peer (re)joined the cluster ("rabbit on node … up")
    REF-1002  the node's disk fell under its free-space limit: it takes no more publishes
              ("disk resource limit alarm set on node"); broker_ref's full store
    REF-1003  the space came back and publishes resume ("… alarm cleared on node")

and RabbitMQ's own events are given codes of their own:

    RMQ-1002  a partition found (Mnesia's inconsistent_database, running_partitioned_network)
    RMQ-1003  pause_minority: the node is in a minority and stops its broker until it is not
    RMQ-1004  autoheal: the node lost, and restarts (its side's changes are discarded)
    RMQ-1005  autoheal: the node won, and waits for the losers to stop
    RMQ-1007  a quorum member learns of a new leader ("detected a new leader … in term"): the
              member follows it from then on (it is MASTER only if it names itself)
    RMQ-1009  a quorum leader steps down ("leader -> follower in term")
    RMQ-1010  the node is asked to stop ("SIGTERM received - shutting down"): it closes its
              clients' connections at once, and serves none as master from then on
    RMQ-1008  a mirror found its queue's master stale (a master that lost its place)
"""

from __future__ import annotations

import re

from lab.targets.protocol import LogRecord

__all__ = ["CODES", "LAB_CODES", "parse_rabbitmq_line"]

# broker_ref's own codes some lines are read as (lab.targets.protocol.ReadsLabCodes)
LAB_CODES = frozenset({"REF-1002", "REF-1003"})

# 2026-12-06T02:50:25.611482+00:00 INFO [n1] <text>
_LINE = re.compile(r"^(\S+) ([A-Z]+) \[([^\]\s]+)\] (.*)$")

CODES: tuple[tuple[str, re.Pattern[str], str | None], ...] = (
    ("MST-1006", re.compile(r"^queue '.*' in vhost '.*': candidate -> leader in term"), "MASTER"),
    (
        "MST-1006",
        re.compile(r"^Mirrored queue '.*' in vhost '.*': Promoting mirror .* to leader"),
        "MASTER",
    ),
    ("RMQ-1002", re.compile(r"inconsistent_database, running_partitioned_network"), None),
    ("RMQ-1003", re.compile(r"Cluster minority/secondary status detected"), "WAITING"),
    ("RMQ-1004", re.compile(r"Autoheal: we were selected to restart"), "WAITING"),
    ("RMQ-1005", re.compile(r"Autoheal: I am the winner"), None),
    ("HA-1006", re.compile(r"^rabbit on node \S+ down"), None),
    ("HA-1005", re.compile(r"^rabbit on node \S+ up"), None),
    ("REF-1002", re.compile(r"^disk resource limit alarm set on node"), None),
    ("REF-1003", re.compile(r"^disk resource limit alarm cleared on node"), None),
    ("RMQ-1007", re.compile(r"detected a new leader .* in term"), None),
    ("RMQ-1009", re.compile(r"^queue '.*' in vhost '.*': leader -> follower in term"), "REPLICA"),
    ("RMQ-1010", re.compile(r"^SIGTERM received - shutting down"), "WAITING"),
    ("RMQ-1008", re.compile(r"Detected stale classic mirrored queue leader"), None),
)


def parse_rabbitmq_line(line: str) -> LogRecord | None:
    """A console line that is one of CODES' events as a record (with the role its node took,
    where the line says so); None for other lines."""
    found = _LINE.match(line.rstrip("\n"))
    if found is None:
        return None
    time, level, node, text = found.groups()
    for code, pattern, role in CODES:
        if pattern.search(text):
            if code == "RMQ-1007":
                role = _follows(text, node)
            return LogRecord(time, level, node, code, text, took_role=role)
    return None


_NEW_LEADER = re.compile(r"detected a new leader \{'[^']*','([^'@]+)@")


def _follows(text: str, node: str) -> str | None:
    """The role of the node that logs a new leader: MASTER when it names itself."""
    found = _NEW_LEADER.search(text)
    if found is None:
        return None
    return "MASTER" if found.group(1) == node else "REPLICA"
