"""Figures only an active-passive cluster's brokers report, read from their log events."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from lab.ground.faultops import TAKES_A_NODE_OUT

__all__ = ["clients_noticed", "consumed_before_replicated"]

NS = 1_000_000_000

_COUNT = re.compile(r"Consumed before replication : (\d+) messages")
CONSUMED_FIRST = "REF-2011"


def consumed_before_replicated(events: Iterable[Mapping[str, Any]]) -> int | None:
    """Messages a primary settled because a consumer took them before its backups held them
    (broker_ref's REF-2011, a running count per broker since it started): the last count of
    each run of each broker, summed. None when no broker reported one."""
    last: dict[str, int] = {}  # the current run's count of each broker
    total = 0
    seen = False
    for e in sorted(events, key=lambda e: int(e.get("time", 0))):
        node = str(e.get("node"))
        if e.get("kind") == "node.start":
            total += last.pop(node, 0)
        elif e.get("kind") == "broker.log" and e.get("code") == CONSUMED_FIRST:
            found = _COUNT.search(str(e.get("text", "")))
            if found is not None:
                last[node] = int(found.group(1))
                seen = True
    return total + sum(last.values()) if seen else None


def clients_noticed(
    events: Iterable[Mapping[str, Any]], infos: list[tuple[float, str | None]]
) -> tuple[float | None, ...]:
    """Per fault (in the order they began), seconds from its start to the first operation
    whose outcome the clients no longer knew (`info`: the connection was lost) on the node
    it took out, before the fault ended; None for a fault that takes no node out, or that
    no client noticed while it lasted. `infos` is every info operation's (time s, node)."""
    events = list(events)
    ends = {str(e.get("id")): int(e["time"]) / NS for e in events if e.get("kind") == "fault.end"}
    found: list[float | None] = []
    for e in events:
        if e.get("kind") != "fault.start":
            continue
        start = int(e["time"]) / NS
        end = ends.get(str(e.get("id")), float("inf"))
        target = e.get("target")
        if e.get("fault") not in TAKES_A_NODE_OUT:
            found.append(None)
            continue
        first = next((t for t, node in infos if start < t <= end and node == target), None)
        found.append(None if first is None else round(first - start, 3))
    return tuple(found)
