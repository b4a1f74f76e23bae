"""What the cluster did in a run, abstracted into a set of behaviours: the feedback a guided
campaign steers by (lab.campaign.guide).

    behaviour_of(run_folder) → frozenset of strings such as
        "roles:REPLICA>WAITING>MASTER"        a node's role changes, three in a row
        "after:kill@MASTER:log:HA-1014"       what followed a fault (the target's role then)
        "leaderless:0.5-1s"                   how long the group had no master, bucketed

A run's timeline (events.jsonl, history.jsonl, result.json) is abstracted the way a greybox
fuzzer abstracts a distributed system's timelines into happens-before summaries: which
transitions and log codes happened, in which order on one node, after which fault, with
counts and durations in coarse buckets — so that timing alone never makes a run new, while a
new role path, a log code never seen, a fault answered differently, an election won behind,
or clients meeting a new kind of error does. `features(events, result, clients)` is the pure
part, over what the files hold.

Behaviours, by prefix:
    role:A>B, roles:A>B>C       node.role changes (MASTER, REPLICA, WAITING, DETACHED …) and
                                each node's paths of three, until the run's teardown
    ha:A>B, has:A>B>C           active-passive statuses (joining, catchup, ready, recovering,
                                active), the same way
    log:CODE                    every operational-log code a node wrote (HA-1005, MST-1006 …)
    event:KIND                  what else the cluster or the manager did (manager.promote,
                                node.exit …), not what the lab did to it
    after:ACTION:WHAT           a role change, status, log code or event, paired with the last
                                thing the lab did before it (HORIZON_S at most): a fault
                                begun, named by kind and by the role its target had
                                (kill@MASTER, cut:client@REPLICA, partition@REPLICA,
                                latency:MASTER>REPLICA), or healed (kill@MASTER:healed); a
                                node's log while it boots is its start, not an answer
    masters:N, master-moves:N, master-returns, leaderless:T, leaderless-at-end,
    election:most-recent|behind, lag-at:FAULT:N
                                elections: how many masters, how often the master moved,
                                how long without one, whether the node elected held the
                                newest transaction, how far the replicas trailed at a kill
    unavailable:N, unavailable-longest:T, unavailable-during:FAULT
                                the clients' unavailability windows and what lasted then
    indeterminate:N, failed:N, duplicated:N, recovered:N, redelivered:N,
    info:ERROR, fail:ERROR, drain:TYPE
                                what the clients met
    verdict:V, violation:KIND, two-masters, consumed-before-replicated:N
                                the judgement
    danger:SIGN                 a near miss (lab.campaign.danger): acknowledgements by a node
                                cut off, or sooner than its slowed links allow, replicas
                                trailing a master that died, two masters, a promotion beside
                                a backup catching up

N is a count bucket (0, 1, 2-3, 4-7 … 64+), T a duration bucket (<0.5s, 0.5-1s … 8s+).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from faults.selectors import split_sides
from lab.campaign.client_behaviour import (
    ClientOutcomes,
    client_outcomes,
    count_bucket,
    judgement,
    seconds_bucket,
)
from lab.campaign.danger import danger_of
from lab.ground.errors import UsageError
from lab.ground.topology import split_node_link
from lab.judge.metrics import read_events

__all__ = ["behaviour_of", "fault_label", "features"]

NS = 1_000_000_000
SETTLE_S = 1.5  # unavailability this soon after a heal still comes of the fault
HORIZON_S = 3.0  # what the cluster does this long after the lab's last action answers it
BOOT_S = 5.0  # a node the lab started is booting until it reports, at most this long
ROUTINE = frozenset(
    {
        "run.start",
        "workload.phase",
        "toxiproxy.start",
        "toxiproxy.stop",
        "worker.start",
        "worker.stop",
        "fault.start",
        "fault.end",
        "fault.armed",
        "fault.skipped",
        "fault.trigger",
        "node.start",
        "node.stop",
        "node.kill",
        "node.pause",
        "node.resume",
        "node.status",
        "node.txid",
        "node.role",
        "node.ha",
        "broker.log",
        "manager.start",
        "manager.stop",
        "disk.fill",
        "disk.free",
        "link.filter",
        "network.connect",
        "network.disconnect",
        "docker.removed",
    }
)  # what the lab did or read, not what the cluster did


def _read_json(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}


def behaviour_of(folder: Path) -> frozenset[str]:
    """The behaviours of the run in `folder` (an empty set when it left no events), with its
    near misses (lab.campaign.danger: `danger:…`)."""
    return features(
        read_events(folder / "events.jsonl"),
        _read_json(folder / "result.json"),
        client_outcomes(folder / "history.jsonl"),
    ) | danger_of(folder)


# ---- the pure part ----------------------------------------------------------------------


def fault_label(event: Mapping[str, Any]) -> str:
    """A fault.start event as its kind and the role its target had then."""
    fault, target = str(event.get("fault")), str(event.get("target"))
    roles = event.get("roles") or {}

    def role(node: str) -> str:
        return str(roles.get(node) or "DOWN")

    if target == "manager":
        return f"{fault}@manager"
    if fault in ("partition", "one_way_partition"):
        try:
            a, b = split_sides(str((event.get("params") or {}).get("sides", "")))
        except UsageError:
            return fault
        alone = a if len(a) <= len(b) else b
        way = "" if fault == "partition" else (":out" if alone is a else ":in")
        return f"{fault}{way}@{'+'.join(sorted(role(n) for n in alone))}"
    ends = split_node_link(target)
    if ends is not None:
        return f"{fault}:{role(ends[0])}>{role(ends[1])}"
    if target.startswith("client_to_"):
        return f"{fault}:client@{role(target.removeprefix('client_to_'))}"
    if target == "client_vip":
        return f"{fault}:vip"
    if fault == "transfer_master":
        return fault
    return f"{fault}@{role(target)}"


def _time(event: Mapping[str, Any]) -> int:
    return int(event.get("time", 0))


def _live(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The events before the run's teardown (where every node stops and reports DETACHED)."""
    ordered = sorted(events, key=_time)
    for i, event in enumerate(ordered):
        if event.get("kind") == "workload.phase" and event.get("phase") == "teardown":
            return ordered[:i]
    return ordered


def _reaction(event: Mapping[str, Any]) -> str | None:
    """What an event says the cluster did, as a behaviour (None: the lab's own doing)."""
    kind = str(event.get("kind"))
    if kind == "node.role":
        return f"role:{event.get('previous')}>{event.get('role')}"
    if kind == "node.ha":
        return f"ha:{event.get('previous')}>{event.get('status')}"
    if kind == "broker.log":
        return f"log:{event.get('code')}"
    return None if kind in ROUTINE else f"event:{kind}"


def _paths(events: Iterable[Mapping[str, Any]], kind: str, field: str, name: str) -> set[str]:
    """Each node's changes of `field` as transitions and paths of three."""
    found: set[str] = set()
    paths: dict[str, list[str]] = {}
    for e in events:
        if e.get("kind") != kind:
            continue
        path = paths.setdefault(str(e.get("node")), [])
        if not path or path[-1] != str(e.get("previous")):  # a restarted node starts again
            path.append(str(e.get("previous")))
        path.append(str(e.get(field)))
    for path in paths.values():
        found.update(
            f"{name}s:{a}>{b}>{c}" for a, b, c in zip(path, path[1:], path[2:], strict=False)
        )
    return found


@dataclass(frozen=True)
class _Fault:
    id: str
    label: str
    start: int
    end: int  # the heal, or the end of the timeline
    healed: bool


def _faults(live: Sequence[Mapping[str, Any]]) -> list[_Fault]:
    ends = {str(e.get("id")): _time(e) for e in live if e.get("kind") == "fault.end"}
    last = _time(live[-1]) if live else 0
    return [
        _Fault(
            str(e.get("id")),
            fault_label(e),
            _time(e),
            ends.get(str(e.get("id")), last),
            str(e.get("id")) in ends,
        )
        for e in live
        if e.get("kind") == "fault.start"
    ]


def _boots(live: Sequence[Mapping[str, Any]]) -> dict[str, list[tuple[int, int]]]:
    """Each node's starts by the lab, until it first reports a role or status (at most
    BOOT_S): what it logs meanwhile is it starting, not an answer to anything."""
    found: dict[str, list[tuple[int, int]]] = {}
    for i, e in enumerate(live):
        if e.get("kind") != "node.start":
            continue
        node, began = str(e.get("node")), _time(e)
        ended = next(
            (
                _time(o)
                for o in live[i + 1 :]
                if o.get("node") == node and o.get("kind") in ("node.role", "node.ha")
            ),
            began + int(BOOT_S * NS),
        )
        found.setdefault(node, []).append((began, min(ended, began + int(BOOT_S * NS))))
    return found


def _reactions(live: Sequence[Mapping[str, Any]], faults: Sequence[_Fault]) -> set[str]:
    """Each thing the cluster did, paired with the last thing the lab did before it (a
    fault begun, or healed: `kill@MASTER`, `kill@MASTER:healed`) within HORIZON_S."""
    actions = sorted(
        [(f.start, f.label) for f in faults]
        + [(f.end, f"{f.label}:healed") for f in faults if f.healed]
    )
    boots = _boots(live)
    horizon = int(HORIZON_S * NS)
    found: set[str] = set()
    for e in live:
        what = _reaction(e)
        if what is None:
            continue
        now = _time(e)
        booting = boots.get(str(e.get("node")), ())
        if what.startswith("log:") and any(a <= now <= b for a, b in booting):
            continue
        cause = next((label for t, label in reversed(actions) if now - horizon <= t <= now), None)
        if cause is not None:
            found.add(f"after:{cause}:{what}")
    return found


def _elections(live: Sequence[Mapping[str, Any]], faults: Sequence[_Fault]) -> set[str]:
    found: set[str] = set()
    masters: list[tuple[int, str]] = []
    master: str | None = None
    lost_at: int | None = 0  # no master yet at the start
    for e in live:
        kind, node = e.get("kind"), str(e.get("node"))
        if kind == "node.role" and e.get("role") == "MASTER":
            if lost_at is not None and masters:
                found.add(f"leaderless:{seconds_bucket((_time(e) - lost_at) / NS)}")
            masters.append((_time(e), node))
            master, lost_at = node, None
        elif node == master and (
            kind in ("node.kill", "node.stop", "node.pause", "node.exit")
            or (kind == "node.role" and e.get("role") != "MASTER")
        ):
            master, lost_at = None, _time(e)
    if masters:
        found.add(f"masters:{count_bucket(len(masters))}")
        moves = sum(a != b for (_, a), (_, b) in pairwise(masters))
        found.add(f"master-moves:{count_bucket(moves)}")
        if any(
            node in {n for _, n in masters[:i]} and node != masters[i - 1][1]
            for i, (_, node) in enumerate(masters)
        ):
            found.add("master-returns")
    if lost_at is not None and masters:
        found.add("leaderless-at-end")
    found.update(_transactions(live, faults, masters))
    return found


def _transactions(
    live: Sequence[Mapping[str, Any]], faults: Sequence[_Fault], masters: list[tuple[int, str]]
) -> set[str]:
    """At a kill: how far the replicas trailed, and whether the next master held the newest
    transaction of the nodes left (node.txid events before and after it)."""
    found: set[str] = set()
    for fault in faults:
        ids: dict[str, dict[str, int]] = {"before": {}, "after": {}}
        for e in live:
            if e.get("kind") == "node.txid" and str(e.get("fault")) == fault.id:
                ids.setdefault(str(e.get("moment")), {})[str(e.get("node"))] = int(e["txid"])
        before, after = ids["before"], ids["after"]
        if len(before) > 1:
            lag = max(before.values()) - min(before.values())
            found.add(f"lag-at:{fault.label}:{count_bucket(lag)}")
        elected = next((n for t, n in masters if t > fault.start), None)
        if elected is not None and elected in after and len(after) > 1:
            newest = max(after.values())
            found.add(f"election:{'most-recent' if after[elected] >= newest else 'behind'}")
    return found


def _unavailability(metrics: Mapping[str, Any], faults: Sequence[_Fault]) -> set[str]:
    windows = [w for w in metrics.get("unavailable_windows") or () if isinstance(w, Mapping)]
    if "unavailable_windows" not in metrics:
        return set()
    found = {f"unavailable:{count_bucket(len(windows))}"}
    if not windows:
        return found
    longest = max(float(w.get("seconds", 0.0)) for w in windows)
    found.add(f"unavailable-longest:{seconds_bucket(longest)}")
    settle = int(SETTLE_S * NS)
    for w in windows:
        start = int(float(w.get("start_s", 0.0)) * NS)
        end = int(float(w.get("end_s", 0.0)) * NS)
        during = [f.label for f in faults if f.start <= end and start <= f.end + settle]
        found.update(f"unavailable-during:{label}" for label in during or ["no-fault"])
    return found


def features(
    events: Sequence[Mapping[str, Any]], result: Mapping[str, Any], clients: ClientOutcomes
) -> frozenset[str]:
    """The behaviours of one run, from its events, its result.json and its clients."""
    live = _live(events)
    faults = _faults(live)
    found: set[str] = set()
    for e in live:
        what = _reaction(e)
        if what is not None and not what.startswith("log:"):
            found.add(what)
    found.update(f"log:{e.get('code')}" for e in events if e.get("kind") == "broker.log")
    found |= _paths(live, "node.role", "role", "role")
    found |= _paths(live, "node.ha", "status", "ha")
    found |= _reactions(live, faults)
    found |= _elections(live, faults)
    found |= _unavailability(result.get("metrics") or {}, faults)
    found |= judgement(result, clients)
    return frozenset(found)
