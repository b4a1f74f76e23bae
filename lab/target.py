"""Targets: what runs as a node (broker_ref, later real brokers).

A target turns a node's plan into a command line and its configuration, reads a
node's status over its management API, and parses its operational log. It knows
nothing about how the node is run (that is the backend's part).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from lab.management import ManagementClient
from lab.spec import Durability, GroupSettings

__all__ = [
    "ClusterPlan",
    "LogRecord",
    "ManagedTarget",
    "NodePlan",
    "NodeStatus",
    "Target",
    "parse_oplog_line",
]


@dataclass(frozen=True)
class NodePlan:
    name: str
    amqp_port: int
    management_port: int
    replication_port: int
    data_dir: Path
    node_dir: Path


@dataclass(frozen=True)
class ClusterPlan:
    group: str
    nodes: tuple[NodePlan, ...]
    durability: Durability
    # node -> peer -> "host:port" the node dials to reach the peer (a Toxiproxy proxy)
    peer_addresses: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    settings: GroupSettings = field(default_factory=GroupSettings)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(plan.name for plan in self.nodes)

    def node(self, name: str) -> NodePlan:
        for plan in self.nodes:
            if plan.name == name:
                return plan
        raise KeyError(name)


@dataclass(frozen=True)
class NodeStatus:
    name: str
    role: str
    last_transaction_id: int | None = None
    queue_depths: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class LogRecord:
    time: str
    level: str
    node: str
    code: str
    text: str

    @property
    def role_change(self) -> tuple[str, str] | None:
        """(old, new) for a role-change line, else None."""
        if self.code != "HA-1010":
            return None
        found = re.search(r"from '(\w+)' to '(\w+)'", self.text)
        return (found.group(1), found.group(2)) if found else None


_OPLOG = re.compile(r"^(\S+) (\w+) \[(\S+)\] ([A-Z]+-\d{4}) : (.*)$")


def parse_oplog_line(line: str) -> LogRecord | None:
    """Parse `<time> <LEVEL> [<node>] <CODE> : <text>`; None for other lines."""
    found = _OPLOG.match(line.rstrip("\n"))
    if found is None:
        return None
    return LogRecord(*found.groups())


class Target(Protocol):
    """What runs as a node."""

    name: str

    def command(self, cluster: ClusterPlan, node: NodePlan) -> list[str]:
        """Write the node's configuration and return the command line that starts it."""
        ...

    def status(self, node: NodePlan, timeout_s: float = 1.0) -> NodeStatus | None:
        """The node's role and counters from its management API; None when it does not answer."""
        ...

    def parse_log_line(self, line: str) -> LogRecord | None:
        """One operational-log line as a record with its code, or None."""
        ...


@runtime_checkable
class ManagedTarget(Protocol):
    """A target whose nodes have a Broker-J-style management API (lab.management)."""

    def management(self, node: NodePlan) -> ManagementClient:
        """A client for the node's management API, with the credentials the node was given."""
        ...
