"""A RabbitMQ node's console lines as the lab reads them.

The lab has each node log one line per event, `<time> <LEVEL> [<node>] <text>`
(lab.targets.rabbitmq.config). RabbitMQ's lines carry no codes of their own; the events that
say what the cluster did are given codes here, each by the exact words RabbitMQ 3.10 writes.
A node taking the queue's lead is read as MST-1006, the code the Java broker (and broker_ref)
writes when a new master has recovered its store and serves (the scenarios' predictions name
it):

    MST-1006  the queue's new leader: a quorum member elected ("candidate -> leader in term"),
              or a mirror promoted to master ("Promoting mirror … to leader")
    RMQ-1002  a partition found (Mnesia's inconsistent_database, running_partitioned_network)
    RMQ-1003  pause_minority: the node is in a minority and stops its broker until it is not
    RMQ-1004  autoheal: the node lost, and restarts (its side's changes are discarded)
    RMQ-1005  autoheal: the node won, and waits for the losers to stop
    RMQ-1006  a peer node is down ("rabbit on node … down")
    RMQ-1007  a quorum member learns of a new leader ("detected a new leader … in term")
    RMQ-1008  a mirror found its queue's master stale (a master that lost its place)
"""

from __future__ import annotations

import re

from lab.targets.protocol import LogRecord

__all__ = ["CODES", "parse_rabbitmq_line"]

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
    ("RMQ-1006", re.compile(r"^rabbit on node \S+ down"), None),
    ("RMQ-1007", re.compile(r"detected a new leader .* in term"), None),
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
            return LogRecord(time, level, node, code, text, took_role=role)
    return None
