"""A node's operational log, line by line: a target's `parse_log_line()` turns a line into a
`LogRecord` with its code, which predictions look for (`LogSeen`) and the run's events keep.

    parse_oplog_line(line)            broker_ref's `<time> <LEVEL> [<node>] <CODE> : <text>`
    match_log_line(pattern, line)     a record from a pattern of a target's own
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LogRecord", "match_log_line", "parse_oplog_line"]


@dataclass(frozen=True)
class LogRecord:
    """One coded line of a node's log (a target's `parse_log_line()`).

    Parameters:
        time: the line's time as the node wrote it.
        level: its level (`INFO` …).
        node: the node that wrote it.
        code: its code (`HA-1010`, `BRK-1004` …): what predictions look for.
        text: the rest of the line.
        took_role: the line says its node took this role (MASTER …) at that moment
            (where a poll of its management API may come too late); None: it does not.
        took_status: the same for an active-passive HA status (`ready` …).
    """

    time: str
    level: str
    node: str
    code: str
    text: str
    took_role: str | None = None
    took_status: str | None = None

    @property
    def role_change(self) -> tuple[str, str] | None:
        """(old, new) for a line reporting this node's own role change, else None.

        Nodes also report what they learn of the others' roles (HA-1010 naming
        another node); those lines are not this node's role."""
        if self.code != "HA-1010":
            return None
        subject = re.search(r"Node : '([^']+)'", self.text)
        if subject is not None and subject.group(1) != self.node:
            return None
        found = re.search(r"from '(\w+)' to '(\w+)'", self.text)
        return (found.group(1), found.group(2)) if found else None

    @property
    def status_change(self) -> tuple[str, str] | None:
        """(old, new) for an active-passive broker's HA status change (broker_ref's REF-2001
        "Status change : joining -> catchup"), else None."""
        if self.code != "REF-2001":
            return None
        found = re.search(r"Status change : (\w+) -> (\w+)", self.text)
        return (found.group(1), found.group(2)) if found else None


_OPLOG = re.compile(r"^(\S+) (\w+) \[(\S+)\] ([A-Z]+-\d{4}) : (.*)$")


def match_log_line(pattern: re.Pattern[str], line: str) -> LogRecord | None:
    """A record from a pattern whose groups are time, level, node, code and text."""
    found = pattern.match(line.rstrip("\n"))
    return None if found is None else LogRecord(*found.groups())


def parse_oplog_line(line: str) -> LogRecord | None:
    """Parse `<time> <LEVEL> [<node>] <CODE> : <text>`; None for other lines."""
    return match_log_line(_OPLOG, line)
