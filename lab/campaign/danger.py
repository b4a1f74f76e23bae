"""How close a run came to losing what it acknowledged: near misses read from what the
clients and the nodes showed, the guide's measure of danger beside novelty.

A run that held may still have been one step from a violation: a master acknowledging while
it was cut off from every replica, acknowledgements quicker than the slowed links to the
replicas allow, replicas trailing a master when it died, two nodes acting as master longer
than a lease lasts, a primary promoted while a backup was still catching up or the promoted
one was not ready. None of these is a violation by itself (a correct broker shows several of
them every so often); each says the schedule pushed where HA bugs live. A guided campaign
mutates such runs more than runs that were merely new (lab.campaign.corpus).

    danger_of(run_folder) → frozenset of signs, as behaviours:
        "danger:acked-while-cut-off:4-7"     acknowledgements by a node cut off from the rest
        "danger:acked-faster-than-links:16-31"  acknowledged sooner than a slowed link allows
        "danger:acked-by-deposed-master:2-3"  by a master after another one was elected
        "danger:lag-at-master-kill:64+"      transactions the others lacked when the master died
        "danger:masters-overlap:1-2s"        two masters at once, longer than the election timeout
        "danger:slow-step-down:2-4s"         a master cut off kept its role past 2 election timeouts
        "danger:promoted-not-ready"          a primary promoted from a status other than ready
        "danger:promoted-beside-catchup"     promoted while another backup was catching up

`signs(events, sends, election_timeout_s)` is the pure part.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faults.selectors import split_sides
from lab.campaign.client_behaviour import count_bucket, seconds_bucket
from lab.ground.errors import UsageError
from lab.ground.topology import split_node_link
from lab.judge.metrics import read_events

__all__ = ["DANGER", "Send", "danger_of", "danger_score", "signs"]

DANGER = "danger:"
NS = 1_000_000_000
GRACE_S = 0.25  # what a node acknowledges this soon after a cut was on its way before it
CUTS = frozenset({"isolate", "partition", "one_way_partition"})


@dataclass(frozen=True)
class Send:
    """An acknowledged send: by which node, when it was sent and when it was acknowledged
    (run clock, ns)."""

    node: str
    sent_ns: int
    acked_ns: int


def read_sends(history: Path) -> list[Send]:
    """The acknowledged sends of history.jsonl (a torn last line ignored)."""
    invoked: dict[tuple[str, Any], int] = {}
    sends: list[Send] = []
    if not history.is_file():
        return sends
    with history.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if '"send"' not in line:
                continue
            try:
                op = json.loads(line)
            except ValueError:
                continue
            key = (str(op.get("process")), op.get("seq", op.get("value")))
            if op.get("type") == "invoke":
                invoked[key] = int(op.get("time", 0))
            elif op.get("type") == "ok" and key in invoked and op.get("node"):
                sends.append(Send(str(op["node"]), invoked.pop(key), int(op.get("time", 0))))
    return sends


def _read_timeout(folder: Path) -> float:
    try:
        spec = json.loads((folder / "spec.json").read_text(encoding="utf-8"))
        return float(spec["group"]["election_timeout_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.6


def danger_of(folder: Path) -> frozenset[str]:
    """The near misses of the run in `folder` (none when it left no events)."""
    return signs(
        read_events(folder / "events.jsonl"),
        read_sends(folder / "history.jsonl"),
        _read_timeout(folder),
    )


def danger_score(behaviours: Iterable[str]) -> int:
    """How many kinds of near miss a run's behaviours hold."""
    return sum(1 for b in behaviours if b.startswith(DANGER))


# ---- the pure part ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Window:
    start_ns: int
    end_ns: int | None
    fault: str
    target: str
    params: Mapping[str, Any]

    def holds(self, t: int) -> bool:
        return self.start_ns <= t and (self.end_ns is None or t < self.end_ns)


def _windows(events: Sequence[Mapping[str, Any]]) -> list[_Window]:
    starts: dict[str, Mapping[str, Any]] = {}
    ends: dict[str, int] = {}
    for e in events:
        if e.get("kind") == "fault.start":
            starts[str(e.get("id"))] = e
        elif e.get("kind") == "fault.end" and e.get("id") is not None:
            ends.setdefault(str(e["id"]), int(e["time"]))
    return [
        _Window(
            int(e["time"]),
            ends.get(fid),
            str(e.get("fault")),
            str(e.get("target")),
            e.get("params") or {},
        )
        for fid, e in starts.items()
    ]


def _alone(window: _Window) -> str | None:
    """The node a cut leaves alone, away from the rest."""
    if window.fault == "isolate":
        return window.target
    try:
        a, b = split_sides(str(window.params.get("sides", "")))
    except UsageError:
        return None
    if len(a) == 1 and len(b) > 1:
        return a[0]
    return b[0] if len(b) == 1 and len(a) > 1 else None


def _acked_while_cut_off(windows: list[_Window], sends: list[Send]) -> int:
    cut: list[tuple[str, int, int | None]] = []
    for w in windows:
        if w.fault in CUTS:
            alone = _alone(w)
            if alone is not None:
                cut.append((alone, w.start_ns + int(GRACE_S * NS), w.end_ns))
    return sum(
        1
        for s in sends
        for node, start, end in cut
        if s.node == node and s.sent_ns >= start and (end is None or s.acked_ns < end)
    )


def _acked_faster_than_links(windows: list[_Window], sends: list[Send], nodes: set[str]) -> int:
    """Sends acknowledged sooner than the latency every link from their node to the others
    carried for the whole send: the ack cannot have waited for any replica."""
    slow: dict[str, list[_Window]] = {}
    for w in windows:
        ends = split_node_link(w.target)
        if w.fault == "latency" and ends is not None:
            slow.setdefault(ends[0], []).append(w)
    found = 0
    for s in sends:
        links = slow.get(s.node, [])
        if not links:
            continue
        covering: dict[str, int] = {}
        for w in links:
            if w.holds(s.sent_ns) and w.holds(s.acked_ns):
                dest = split_node_link(w.target)
                assert dest is not None
                ms = int(w.params.get("latency_ms", 0))
                covering[dest[1]] = min(covering.get(dest[1], ms), ms)
        others = nodes - {s.node}
        quick = covering and s.acked_ns - s.sent_ns < min(covering.values()) * 1_000_000
        if others and set(covering) >= others and quick:
            found += 1
    return found


def _masters(events: Sequence[Mapping[str, Any]]) -> list[tuple[int, frozenset[str]]]:
    """After each change (in time order, from the load's start to the teardown), the nodes
    that say they are master and can act on it: a node killed or frozen by the lab is left
    out until it runs again."""
    says: set[str] = set()
    halted: set[str] = set()
    frozen: dict[str, str] = {}  # fault id → node it froze
    timeline: list[tuple[int, frozenset[str]]] = []
    loaded = False
    for e in events:
        kind = e.get("kind")
        if kind == "workload.phase":
            if e.get("phase") == "teardown":
                break
            if e.get("phase") == "load" and not loaded:
                loaded = True
                timeline.append((int(e["time"]), frozenset(says - halted)))
        node = None if e.get("node") is None else str(e["node"])
        if kind == "node.role" and node is not None:
            (says.add if e.get("role") == "MASTER" else says.discard)(node)
            halted.discard(node)
        elif kind in ("node.start", "node.exit") and node is not None:
            says.discard(node)
            halted.discard(node)
        elif kind == "fault.start" and e.get("fault") in ("kill", "graceful_stop", "pause"):
            halted.add(str(e.get("target")))
            if e.get("fault") == "pause":
                frozen[str(e.get("id"))] = str(e.get("target"))
        elif kind == "fault.end" and str(e.get("id")) in frozen:
            halted.discard(frozen.pop(str(e.get("id"))))
        else:
            continue
        if loaded:
            timeline.append((int(e["time"]), frozenset(says - halted)))
    return timeline


def _overlap_s(timeline: list[tuple[int, frozenset[str]]]) -> float:
    longest = 0.0
    since: int | None = None
    for t, masters in timeline:
        if len(masters) > 1 and since is None:
            since = t
        elif len(masters) <= 1 and since is not None:
            longest = max(longest, (t - since) / NS)
            since = None
    return longest


def _acked_by_deposed(timeline: list[tuple[int, frozenset[str]]], sends: list[Send]) -> int:
    """Acks by a node sent after another node became master while it still said it was."""
    deposed: list[tuple[str, int, int | None]] = []  # node, since, until
    previous: frozenset[str] = frozenset()
    for t, masters in timeline:
        for new in masters - previous:
            for old in previous & masters:
                if old != new:
                    deposed.append((old, t, None))
        for i, (node, since, until) in enumerate(deposed):
            if until is None and node not in masters:
                deposed[i] = (node, since, t)
        previous = masters
    return sum(
        1
        for s in sends
        for node, since, until in deposed
        if s.node == node
        and s.sent_ns >= since + GRACE_S * NS
        and (until is None or s.acked_ns < until)
    )


def _lag_at_master_kill(events: Sequence[Mapping[str, Any]]) -> int:
    killed_masters: set[str] = set()
    for e in events:
        if e.get("kind") == "fault.start" and e.get("fault") == "kill":
            roles = e.get("roles") or {}
            if roles.get(e.get("target")) == "MASTER":
                killed_masters.add(str(e.get("id")))
    before: dict[str, dict[str, int]] = {}
    for e in events:
        if e.get("kind") == "node.txid" and e.get("moment") == "before":
            fid = str(e.get("fault"))
            if fid in killed_masters and e.get("node") is not None:
                before.setdefault(fid, {})[str(e["node"])] = int(e.get("txid", 0))
    victims = {
        str(e.get("id")): str(e.get("target"))
        for e in events
        if e.get("kind") == "fault.start" and str(e.get("id")) in killed_masters
    }
    worst = 0
    for fid, txids in before.items():
        master = txids.get(victims.get(fid, ""))
        others = [t for n, t in txids.items() if n != victims.get(fid)]
        if master is not None and others:
            worst = max(worst, master - max(others))
    return worst


def _slow_step_down(events: Sequence[Mapping[str, Any]], election_timeout_s: float) -> float:
    """The longest a master cut off from the rest kept its role past twice the election
    timeout (the window between losing its quorum and stopping work), in seconds."""
    worst = 0.0
    ends = {str(e.get("id")): int(e["time"]) for e in events if e.get("kind") == "fault.end"}
    for e in events:
        if e.get("kind") != "fault.start" or e.get("fault") not in CUTS:
            continue
        roles = e.get("roles") or {}
        window = _Window(
            int(e["time"]), None, str(e.get("fault")), str(e.get("target")), e.get("params") or {}
        )
        alone = _alone(window)
        if alone is None or roles.get(alone) != "MASTER":
            continue
        start = int(e["time"])
        end = ends.get(str(e.get("id")))
        stepped = next(
            (
                int(r["time"])
                for r in events
                if r.get("kind") == "node.role"
                and r.get("node") == alone
                and r.get("role") != "MASTER"
                and int(r["time"]) >= start
            ),
            None,
        )
        held_until = [t for t in (stepped, end) if t is not None]  # it stepped down, or healed
        if held_until:
            worst = max(worst, (min(held_until) - start) / NS)
    return worst if worst > 2 * election_timeout_s else 0.0


def _promotions(events: Sequence[Mapping[str, Any]]) -> set[str]:
    """Promotions after the cluster's first (when no broker was ready yet, by design)."""
    found: set[str] = set()
    first = True
    for e in events:
        if e.get("kind") != "manager.promote":
            continue
        if first:
            first = False
            continue
        statuses = e.get("statuses") or {}
        node = e.get("node")
        if statuses.get(node) not in (None, "ready"):
            found.add("promoted-not-ready")
        if any(s == "catchup" for n, s in statuses.items() if n != node):
            found.add("promoted-beside-catchup")
    return found


def signs(
    events: Sequence[Mapping[str, Any]], sends: list[Send], election_timeout_s: float
) -> frozenset[str]:
    """The near misses of a run, from its events (in time order) and its acknowledged sends."""
    windows = _windows(events)
    nodes = {str(e["node"]) for e in events if e.get("kind") == "node.start" and e.get("node")}
    found: set[str] = set()
    counts = {
        "acked-while-cut-off": _acked_while_cut_off(windows, sends),
        "acked-faster-than-links": _acked_faster_than_links(windows, sends, nodes),
    }
    timeline = _masters(events)
    counts["acked-by-deposed-master"] = _acked_by_deposed(timeline, sends)
    counts["lag-at-master-kill"] = _lag_at_master_kill(events)
    found.update(f"{name}:{count_bucket(n)}" for name, n in counts.items() if n > 0)
    overlap = _overlap_s(timeline)
    if overlap > election_timeout_s:
        found.add(f"masters-overlap:{seconds_bucket(overlap)}")
    slow = _slow_step_down(events, election_timeout_s)
    if slow:
        found.add(f"slow-step-down:{seconds_bucket(slow)}")
    found.update(_promotions(events))
    return frozenset(DANGER + sign for sign in found)
