"""Per-run figures from the history and the events: availability, failover, masters over time."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from lab.ground.faultops import TAKES_A_NODE_OUT
from lab.judge.cluster_metrics import clients_noticed, consumed_before_replicated

__all__ = ["RunMetrics", "masters_over_time", "read_events", "read_operations", "run_metrics"]

NS = 1_000_000_000
RESUME_GRACE_NS = NS // 2


@dataclass(frozen=True)
class Window:
    start_s: float
    end_s: float

    @property
    def seconds(self) -> float:
        return round(self.end_s - self.start_s, 3)


@dataclass(frozen=True)
class RunMetrics:
    operations: int
    acknowledged_sends: int
    received: int
    workload_s: float
    load_start_s: float
    load_end_s: float
    acknowledged_per_s: float
    unavailability_threshold_s: float
    unavailable_windows: tuple[Window, ...]
    unavailable_total_s: float
    unavailable_longest_s: float
    # per fault, seconds from its start to the next acknowledged send, whoever serves it; for
    # a fault that takes a node out (kill, pause, isolate …), one on that node counts only
    # once it is back (restarted, resumed, healed)
    failover_s: tuple[float | None, ...]
    masters: tuple[tuple[float, str, str], ...]  # (time s, node, role) for every role change
    two_masters_seen: bool
    # active-passive: messages settled because consumed before the backups held them
    consumed_before_replicated: int | None = None
    # per fault, seconds until a client lost its connection to the node it took out
    clients_noticed_s: tuple[float | None, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["unavailable_windows"] = [
            {"start_s": w.start_s, "end_s": w.end_s, "seconds": w.seconds}
            for w in self.unavailable_windows
        ]
        out["masters"] = [{"time_s": t, "node": n, "role": r} for t, n, r in self.masters]
        return out


def read_events(path: Path) -> list[dict[str, Any]]:
    """events.jsonl as dicts; a torn last line is skipped."""
    found: list[dict[str, Any]] = []
    if not path.is_file():
        return found
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            found.append(obj)
    return found


_OPERATIONS = pa.schema(
    [
        ("time", pa.int64()),
        ("process", pa.string()),
        ("type", pa.string()),
        ("f", pa.string()),
        ("value", pa.string()),
        ("node", pa.string()),
    ]
)


def read_operations(path: Path) -> pa.Table:
    """history.jsonl with the columns the figures need (including `node`); a torn last line
    is ignored. The checker's reader stays lean; this one is for a single run's figures."""
    data = path.read_bytes() if path.is_file() else b""
    data = data[: data.rfind(b"\n") + 1]
    if not data:
        return _OPERATIONS.empty_table()
    table = pa_json.read_json(
        pa.BufferReader(data),
        parse_options=pa_json.ParseOptions(
            explicit_schema=_OPERATIONS, unexpected_field_behavior="ignore"
        ),
    )
    return table.select(_OPERATIONS.names)


def _gaps(times_s: list[float], start_s: float, end_s: float, threshold_s: float) -> list[Window]:
    edges = [start_s, *times_s, end_s]
    return [Window(round(a, 3), round(b, 3)) for a, b in pairwise(edges) if b - a > threshold_s]


def masters_over_time(events: Iterable[Mapping[str, Any]]) -> tuple[tuple[float, str, str], ...]:
    return tuple(
        (round(int(e["time"]) / NS, 3), str(e.get("node")), str(e.get("role")))
        for e in events
        if e.get("kind") == "node.role"
    )


def _two_masters(events: Iterable[Mapping[str, Any]]) -> bool:
    """True if two nodes were MASTER at the same time, by their role changes.

    A killed, stopped, exited (ended by itself) or restarted node is no master; a paused
    (frozen) one acts as nothing while frozen, and is a master again on resuming if it was
    one, until it reports another role — after a grace of RESUME_GRACE_NS, the time its report of
    the step-down a resumed node makes at once takes to reach the lab. What happens
    once the run's teardown began (nodes stopping one by one) does not count.
    """
    claims: set[str] = set()  # nodes whose last reported role is MASTER
    frozen: set[str] = set()
    resumed_at: dict[str, int] = {}
    for e in sorted(events, key=lambda e: int(e.get("time", 0))):
        node = e.get("node")
        kind = e.get("kind")
        now = int(e.get("time", 0))
        if kind == "workload.phase" and e.get("phase") == "teardown":
            return False
        if not node:
            continue
        if kind == "node.role":
            if e.get("role") == "MASTER":
                claims.add(node)
            else:
                claims.discard(node)
        elif kind in ("node.kill", "node.stop", "node.exit", "node.start"):
            claims.discard(node)
            frozen.discard(node)
        elif kind == "node.pause":
            frozen.add(node)
        elif kind == "node.resume":
            frozen.discard(node)
            resumed_at[node] = now
        acting = {
            n
            for n in claims - frozen
            if now - resumed_at.get(n, -RESUME_GRACE_NS) >= RESUME_GRACE_NS
        }
        if len(acting) > 1:
            return True
    return False


def _failover(
    events: Iterable[Mapping[str, Any]], sends_ok: list[tuple[float, str | None]]
) -> list[float | None]:
    """Per fault (in the order they began), seconds from its start to the next acknowledged
    send, whoever serves it; None when no send was acknowledged after it.

    A send the node a fault took out (TAKES_A_NODE_OUT) acknowledges counts only once that
    node is back: restarted or resumed (its next `node.start` / `node.resume`), or the fault
    healed (`fault.end`). Until then what it acknowledges was in flight before the fault; from
    then on it is service again, so a single node killed and restarted has a failover time too."""
    events = list(events)
    nodes = {str(e["node"]) for e in events if e.get("kind") == "node.start" and e.get("node")}
    ends = {  # the heals that worked (a refused one leaves the node out)
        str(e.get("id")): int(e["time"]) / NS
        for e in events
        if e.get("kind") == "fault.end" and not e.get("error")
    }
    found: list[float | None] = []
    for e in events:
        if e.get("kind") != "fault.start":
            continue
        started = int(e["time"]) / NS
        out = e.get("fault") in TAKES_A_NODE_OUT and e.get("target") in nodes
        hit = e.get("target") if out else None
        back = _back(events, hit, started, ends.get(str(e.get("id")))) if out else started
        after = next((t for t, n in sends_ok if t > started and (n != hit or t >= back)), None)
        found.append(None if after is None else round(after - started, 3))
    return found


def _back(
    events: list[Mapping[str, Any]], node: object, since_s: float, healed_s: float | None
) -> float:
    """When `node`, taken out at `since_s`, serves again: its first start or resume after
    that, or the fault's heal (`healed_s`), whichever came first; never, when neither did."""
    again = [
        int(e["time"]) / NS
        for e in events
        if e.get("kind") in ("node.start", "node.resume")
        and e.get("node") == node
        and int(e["time"]) / NS > since_s
    ]
    return min([*again, float("inf") if healed_s is None else healed_s])


def _info_ops(history: pa.Table) -> list[tuple[float, str | None]]:
    infos = history.filter(pc.equal(history["type"], "info"))
    nodes = infos["node"].to_pylist() if "node" in infos.column_names else [None] * len(infos)
    return sorted((t / NS, n) for t, n in zip(infos["time"].to_pylist(), nodes, strict=True))


def run_metrics(
    history: pa.Table,
    events: list[dict[str, Any]],
    *,
    threshold_s: float = 1.0,
) -> RunMetrics:
    phases = {
        e.get("phase"): int(e["time"]) / NS for e in events if e.get("kind") == "workload.phase"
    }
    sends_ok = history.filter(
        pc.and_(pc.equal(history["f"], "send"), pc.equal(history["type"], "ok"))
    )
    ok_nodes = (
        sends_ok["node"].to_pylist()
        if "node" in sends_ok.column_names
        else [None] * sends_ok.num_rows
    )
    ok_sends = sorted(
        (t / NS, n) for t, n in zip(sends_ok["time"].to_pylist(), ok_nodes, strict=True)
    )
    ok_times = [t for t, _ in ok_sends]
    received = int(
        pc.sum(
            pc.and_(pc.equal(history["f"], "receive"), pc.equal(history["type"], "ok")).cast(
                pa.int64()
            )
        ).as_py()
        or 0
    )
    start_s = phases.get("load", ok_times[0] if ok_times else 0.0)
    end_s = phases.get("heal", ok_times[-1] if ok_times else start_s)
    in_load = [t for t in ok_times if start_s <= t <= end_s]
    windows = _gaps(in_load, start_s, end_s, threshold_s)
    failover = _failover(events, ok_sends)
    workload_s = max(0.0, end_s - start_s)
    return RunMetrics(
        operations=history.num_rows,
        acknowledged_sends=len(ok_times),
        received=received,
        workload_s=round(workload_s, 3),
        load_start_s=round(start_s, 3),
        load_end_s=round(end_s, 3),
        acknowledged_per_s=round(len(in_load) / workload_s, 1) if workload_s else 0.0,
        unavailability_threshold_s=threshold_s,
        unavailable_windows=tuple(windows),
        unavailable_total_s=round(sum(w.seconds for w in windows), 3),
        unavailable_longest_s=max((w.seconds for w in windows), default=0.0),
        failover_s=tuple(failover),
        masters=masters_over_time(events),
        two_masters_seen=_two_masters(events),
        consumed_before_replicated=consumed_before_replicated(events),
        clients_noticed_s=clients_noticed(events, _info_ops(history)),
    )
