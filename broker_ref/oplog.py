"""The operational log: one flushed line per event on stdout, as Broker-J writes it.

    2026-11-21T16:00:00.123Z INFO [n1] MST-1001 : Created

The lab parses each line with `^(\\S+) (\\w+) \\[(\\S+)\\] ([A-Z]+-\\d{4}) : (.*)$`.
Codes are Broker-J's where Broker-J has one; `REF-` codes are this broker's own.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TextIO

__all__ = ["Code", "OperationalLog", "format_line", "utc_now"]


class Code(enum.StrEnum):
    """The operational log messages this node writes."""

    BROKER_STARTING = "BRK-1002"
    BROKER_READY = "BRK-1004"
    BROKER_STOPPED = "BRK-1005"
    STORE_CREATED = "MST-1001"
    STORE_LOCATION = "MST-1002"
    STORE_CLOSED = "MST-1003"
    RECOVERY_START = "MST-1004"
    RECOVERED_MESSAGES = "MST-1005"
    RECOVERY_COMPLETE = "MST-1006"
    CONNECTION_OPEN = "CON-1001"
    CONNECTION_CLOSE = "CON-1002"
    NODE_ADDED = "HA-1003"
    NODE_REMOVED = "HA-1004"
    NODE_JOINED = "HA-1005"
    NODE_LEFT = "HA-1006"
    TRANSFER_MASTER = "HA-1007"
    INTRUDER_DETECTED = "HA-1008"
    INSUFFICIENT_REPLICAS = "HA-1009"
    ROLE_CHANGE = "HA-1010"
    MINIMUM_GROUP_SIZE = "HA-1011"
    PRIORITY = "HA-1012"
    DESIGNATED_PRIMARY = "HA-1013"
    TRANSACTIONS_DISCARDED = "HA-1014"
    STORE_PASSIVATED = "MST-1007"
    NETWORK_RESTORE = "REF-1004"
    ROLLED_BACK = "REF-1005"
    COMMIT_TIMED_OUT = "REF-1006"
    ELECTION = "REF-1007"
    LOG_TAIL_TRUNCATED = "REF-1001"
    STORE_WRITE_FAILED = "REF-1002"
    STORE_WRITES_RESUMED = "REF-1003"
    STORE_CORRUPT = "REF-1008"  # Store corrupt : file : offset : why (the node stops)
    PEER_REFUSED = "REF-1009"  # Peer refused : host:port : node 'x' : why (replication port)
    MANAGEMENT_REFUSED = "REF-1010"  # Management request refused : 415 : POST /path : why
    REMOVED_FROM_GROUP = "REF-1011"  # Removed from group : node 'x' … cannot be reused
    # the active-passive cluster (the C++ broker's HA module has no codes; these are ours)
    HA_STATUS = "REF-2001"  # Status change : joining -> catchup
    HA_PROMOTED = "REF-2002"  # Promoted to primary
    HA_RECOVERING = "REF-2003"  # Recovering backups : ...
    HA_RECOVERED = "REF-2004"  # All backups recovered
    HA_BACKUP_TIMED_OUT = "REF-2005"  # Recovering backup timed out : ...
    HA_BACKUP_READY = "REF-2006"  # Backup is ready / New backup is ready : ...
    HA_CONNECTED = "REF-2007"  # Connected to primary : ...
    HA_DISCONNECTED = "REF-2008"  # Disconnected from primary : ...
    HA_PROMOTION_REFUSED = "REF-2009"  # Still catching up, cannot be promoted.
    HA_BACKUP_DEAD = "REF-2010"  # Backup ... missed its heartbeats
    HA_CONSUMED_FIRST = "REF-2011"  # Consumed before replication : N messages
    HA_LINK_REFUSED = "REF-2012"  # Client closed connection with 320 : ...
    HA_AUTH_FAILED = "REF-2013"  # Authentication failed for ...
    HA_REPLICATION = "REF-2014"  # Queue replication : 'q' replicate none
    # the AMQP port's limits (connection_guard.py): once per burst, then a count
    CONNECTION_LIMIT = "REF-3001"  # Connection limit : ... refusing new connections
    HANDSHAKE_TIMEOUT = "REF-3002"  # Handshake timeout : closed N connections ...
    CONNECTION_ERROR = "REF-3003"  # Connection error : Peer : ... : framing-error : ...


def utc_now() -> datetime:
    return datetime.now(UTC)


def format_line(when: datetime, level: str, node: str, code: str, text: str) -> str:
    """One operational log line, without the newline."""
    stamp = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    millis = when.microsecond // 1000
    flat = " ".join(text.splitlines())
    return f"{stamp}.{millis:03d}Z {level} [{node}] {code} : {flat}"


class OperationalLog:
    """Writes operational log lines for one node; safe to use from any thread."""

    def __init__(self, node: str, out: TextIO, clock: Callable[[], datetime] = utc_now) -> None:
        self._node = node
        self._out = out
        self._clock = clock
        self._lock = threading.Lock()

    def info(self, code: Code, text: str) -> None:
        self._write("INFO", code, text)

    def warn(self, code: Code, text: str) -> None:
        self._write("WARN", code, text)

    def error(self, code: Code, text: str) -> None:
        self._write("ERROR", code, text)

    def _write(self, level: str, code: Code, text: str) -> None:
        line = format_line(self._clock(), level, self._node, code.value, text)
        with self._lock:
            try:
                self._out.write(line + "\n")
                self._out.flush()
            except (OSError, ValueError):
                # A closed stdout (the lab went away) must not stop the broker.
                pass
