"""Which published loss scenario a run that lost acknowledged messages matches, read from the
run's own evidence once it is over (the campaign that found it knows none of them).

The published ways RabbitMQ's classic mirrored queues lose acknowledged messages:

    unsynchronised-promotion   a mirror that (re)joined after a message was enqueued, so never
                               held it, is promoted when the master's node fails (RabbitMQ's
                               guide "Classic Queue Mirroring", section "Promotion of
                               Unsynchronised Mirrors on Failure"; J. Vanlightly, "How to Lose
                               Messages on a RabbitMQ Cluster", 2018)
    partition-discarded        a partition split the queue's master and mirrors, each side took
                               messages, and the healing restarted one side, whose messages are
                               gone ("Clustering and Network Partitions", sections "Partition
                               Handling Strategies" and "Recovering From a Split-Brain";
                               Jepsen's RabbitMQ analysis, 2014)

A run matches the first when a node promoted to master (its MST-1006 line) last started after a
lost message was acknowledged and before its promotion; the second when a node restarted to
heal a partition (RMQ-1004: autoheal chose it to restart; RMQ-1003: pause_minority paused it)
or a partition was found (RMQ-1002) after it began, and a lost message was acknowledged between
the partition's start and that line. Anything else is `other`, saying when the first lost
message was acknowledged while no node was master.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PUBLISHED", "Match", "match_run"]

NS = 1e9
PUBLISHED = {
    "unsynchronised-promotion": "an unsynchronised mirror promoted when the master's node "
    "failed (RabbitMQ's guide, Classic Queue Mirroring: Promotion of Unsynchronised Mirrors on "
    "Failure; Vanlightly 2018)",
    "partition-discarded": "a partition healed by restarting one side, whose acknowledged "
    "messages were discarded (RabbitMQ's guide, Network Partitions: Partition Handling "
    "Strategies, Recovering From a Split-Brain; Jepsen 2014)",
    "other": "no published scenario",
}
HEALING = ("RMQ-1002", "RMQ-1003", "RMQ-1004")
SLACK_S = 5.0  # a healing logged a little after the last message its side acknowledged


@dataclass(frozen=True)
class Match:
    scenario: str  # a key of PUBLISHED
    evidence: str

    @property
    def description(self) -> str:
        return PUBLISHED[self.scenario]


def _lines(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a torn last line
    return out


def _lost_acks(folder: Path) -> list[float]:
    """When each lost message was (last) acknowledged, in seconds of the run's clock."""
    result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    lost = set(result.get("check", {}).get("lost", {}).get("ids", ()))
    acked: dict[str, float] = {}
    for op in _lines(folder / "history.jsonl"):
        if op.get("f") == "send" and op.get("type") == "ok" and op.get("value") in lost:
            acked[str(op["value"])] = int(op["time"]) / NS
    return sorted(acked.values())


def match_run(folder: Path) -> Match:
    """The published scenario the run in `folder` matches (see the module's note)."""
    acks = _lost_acks(folder)
    if not acks:
        return Match("other", "no lost message was acknowledged")
    events = _lines(folder / "events.jsonl")
    starts: dict[str, list[float]] = {}
    for event in events:
        if event.get("kind") == "node.start" and event.get("node"):
            starts.setdefault(str(event["node"]), []).append(int(event["time"]) / NS)
    first_lost = acks[0]
    for event in events:
        if event.get("kind") != "broker.log" or event.get("code") != "MST-1006":
            continue
        node, at = str(event.get("node")), int(event["time"]) / NS
        joined = [t for t in starts.get(node, ()) if t < at]
        if joined and first_lost < joined[-1]:
            return Match(
                "unsynchronised-promotion",
                f"{node} started at {joined[-1]:.1f} s, after the first lost message was "
                f"acknowledged ({first_lost:.1f} s), and was promoted at {at:.1f} s",
            )
    healing = [
        (int(e["time"]) / NS, str(e.get("node")), str(e.get("code")))
        for e in events
        if e.get("kind") == "broker.log" and e.get("code") in HEALING
    ]
    cuts = [
        int(e["time"]) / NS
        for e in events
        if e.get("kind") == "fault.start" and e.get("fault") in ("partition", "isolate")
    ]
    for began in cuts:
        after = [h for h in healing if h[0] >= began]
        if not after:
            continue
        # the healing that discarded a side, before the partition merely found
        at, node, code = min(after, key=lambda h: (HEALING[::-1].index(h[2]), h[0]))
        during = [a for a in acks if began <= a <= at + SLACK_S]
        if during:
            return Match(
                "partition-discarded",
                f"{len(during)} lost message(s) acknowledged between a partition's start "
                f"({began:.1f} s) and {code} on {node} at {at:.1f} s",
            )
    if _master_at(events, first_lost) is None:
        return Match(
            "other",
            f"{len(acks)} lost, acknowledged from {first_lost:.1f} s while no node was master "
            "(as the nodes' own lines and the lab's kills and stops say)",
        )
    return Match("other", f"{len(acks)} lost; no promotion or healing that explains them")


def _master_at(events: list[dict[str, Any]], at_s: float) -> str | None:
    """The node MASTER at `at_s` by its last role line (a killed, stopped or restarted node is
    no master), or None."""
    master: str | None = None
    for event in sorted(events, key=lambda e: int(e.get("time", 0))):
        if int(event.get("time", 0)) / NS > at_s:
            break
        node, kind = event.get("node"), event.get("kind")
        if kind == "node.role" and event.get("role") == "MASTER":
            master = str(node)
        elif node == master and (
            kind in ("node.kill", "node.stop", "node.exit", "node.start")
            or (kind == "node.role" and event.get("role") != "MASTER")
        ):
            master = None
    return master
