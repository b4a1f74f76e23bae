"""What each synthesized run folder holds: the history, spec, events and result of one
planned run (synth_runs.py plans the store and writes the folders)."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

__all__ = [
    "REVISIONS",
    "Defect",
    "Plan",
    "SynthConfig",
    "Timeline",
    "event_lines",
    "history_lines",
    "result_of",
    "spec_of",
]

NS = 1_000_000_000
REVISIONS = ("1a2b3c4", "5d6e7f8", "9a0b1c2")
Defect = Literal["killed", "error", "bad-spec", "no-result"]


@dataclass(frozen=True)
class SynthConfig:
    """A durability configuration and how fast it is relative to a single node."""

    nodes: int
    master_sync: str
    replica_sync: str
    ack_policy: str
    coalescing_sync: bool
    speed: float


@dataclass(frozen=True)
class Plan:
    root: Path
    number: int
    scenario: str
    seed: int
    stamp: dt.datetime
    revision: str
    config: SynthConfig
    clients: int
    operations: int
    lose: int
    defect: Defect | None
    copies: bool = True


@dataclass(frozen=True)
class Timeline:
    """The run's figures that result.json and events.jsonl report."""

    duration_s: float
    fault_s: float | None
    failover_s: float | None
    acknowledged: int
    received: int
    duplicated: int
    operations: int
    lost_ids: tuple[str, ...]


def history_lines(plan: Plan, rng: np.random.Generator) -> tuple[list[str], Timeline]:
    """History lines in time order and the figures they imply."""
    clients = plan.clients
    crash = plan.scenario == "master-crash"
    messages = max(10, (plan.operations - 4 * clients) // 3)
    rate = 2_000.0 * clients**0.5 * plan.config.speed
    ack_median = 0.002 * (1 + clients / 4) / plan.config.speed**0.5
    invoke = np.sort(rng.uniform(0.0, messages / rate, messages)) + 0.5
    ack = invoke + rng.lognormal(np.log(ack_median), 0.5, messages)
    duration = float(messages / rate)
    fault_s = failover_s = None
    retried = np.zeros(messages, dtype=bool)
    if crash:
        fault_s = 0.5 + 0.4 * duration
        slow = REVISIONS.index(plan.revision) == len(REVISIONS) - 1
        failover_s = round(float(rng.uniform(2.5, 4.0) if slow else rng.uniform(0.8, 2.0)), 3)
        healed = fault_s + failover_s
        in_flight = (invoke < fault_s) & (ack >= fault_s)
        retried = in_flight & (rng.random(messages) < 0.5)
        waiting = (ack >= fault_s) & (ack < healed + 0.01)
        ack = np.where(waiting, healed + (ack - fault_s) * 0.05 + 0.001, ack)
    receive = ack + rng.lognormal(np.log(0.001 * (1 + clients / 8)), 0.4, messages)
    lost = np.zeros(messages, dtype=bool)
    if plan.lose and fault_s is not None:
        before = np.flatnonzero((ack < fault_s) & (ack > fault_s - 0.5))
        chosen = before[-plan.lose :] if before.size else np.arange(min(plan.lose, messages))
        lost[chosen] = True
    duplicate = retried & (rng.random(messages) < 0.3)
    producer = np.arange(messages) % clients
    seq = np.arange(messages) // clients
    values = [f'"p{p}-{s}"' for p, s in zip(producer.tolist(), seq.tolist(), strict=True)]
    consumer = rng.integers(0, clients, messages)
    # Each op: (time, message, kind); kinds 0 invoke, 1 ok, 2 info, 3 receive.
    times: list[np.ndarray] = [invoke, ack]
    message_of: list[np.ndarray] = [np.arange(messages), np.arange(messages)]
    kinds: list[np.ndarray] = [np.zeros(messages, np.int8), np.ones(messages, np.int8)]
    if crash and fault_s is not None and failover_s is not None:
        again = np.flatnonzero(retried)
        times += [np.full(again.size, fault_s + 0.001), np.full(again.size, fault_s + failover_s)]
        message_of += [again, again]
        kinds += [np.full(again.size, 2, np.int8), np.zeros(again.size, np.int8)]
    delivered = np.flatnonzero(~lost)
    twice = np.flatnonzero(duplicate & ~lost)
    times += [receive[delivered], receive[twice] + 0.002]
    message_of += [delivered, twice]
    kinds += [np.full(delivered.size, 3, np.int8), np.full(twice.size, 3, np.int8)]
    all_times = np.concatenate(times)
    all_messages = np.concatenate(message_of)
    all_kinds = np.concatenate(kinds)
    order = np.argsort(all_times, kind="stable")
    nanos = (all_times[order] * NS).astype(np.int64).tolist()
    producers = [f"p{p}" for p in range(clients)]
    consumers = [f"c{c}" for c in range(clients)]
    head = (
        '"type":"invoke","f":"send"',
        '"type":"ok","f":"send"',
        '"type":"info","f":"send"',
        '"type":"ok","f":"receive"',
    )
    lines: list[str] = []
    append = lines.append
    template = '{"index":%d,"time":%d,"process":"%s",%s,"value":%s}\n'
    for index, (time, message, kind) in enumerate(
        zip(nanos, all_messages[order].tolist(), all_kinds[order].tolist(), strict=True)
    ):
        process = consumers[consumer[message]] if kind == 3 else producers[producer[message]]
        append(template % (index, time, process, head[kind], values[message]))
    end = (float(all_times.max()) + 0.05) * NS
    for number, name in enumerate(consumers):
        for offset, outcome in ((0, "invoke"), (1, "ok")):
            time = int(end) + number * 1000 + offset * 500_000
            append(
                f'{{"index":{len(lines)},"time":{time},"process":"{name}",'
                f'"type":"{outcome}","f":"drain","value":null}}\n'
            )
    return lines, Timeline(
        duration_s=round(duration, 3),
        fault_s=fault_s,
        failover_s=failover_s,
        acknowledged=messages,
        received=int(delivered.size),
        duplicated=int(twice.size),
        operations=len(lines),
        lost_ids=tuple(sorted(values[m].strip('"') for m in np.flatnonzero(lost).tolist())),
    )


def spec_of(plan: Plan, timeline: Timeline) -> dict[str, Any]:
    c = plan.config
    schedule = []
    if timeline.fault_s is not None and timeline.failover_s is not None:
        at = round(timeline.fault_s - 0.5, 3)
        base = {"fault": "kill", "target": "master", "id": "f1", "params": {}}
        schedule = [
            {"at_s": at, "action": "start", **base},
            {"at_s": round(at + timeline.failover_s + 1.0, 3), "action": "stop", **base},
        ]
    return {
        "v": 1,
        "scenario": plan.scenario,
        "seed": plan.seed,
        "target": "broker_ref",
        "backend": "process",
        "topology": {"nodes": c.nodes},
        "durability": {
            "master_sync": c.master_sync,
            "replica_sync": c.replica_sync,
            "ack_policy": c.ack_policy,
            "coalescing_sync": c.coalescing_sync,
        },
        "workload": {
            "producers": plan.clients,
            "consumers": plan.clients,
            "rate": 0.0,
            "size": 1024,
            "window": 100,
            "duration_s": round(timeline.duration_s, 3),
            "queue": "lab",
            "drain_timeout_s": 30.0,
        },
        "schedule": schedule,
        "lab_version": "0.1.0",
        "git_revision": plan.revision,
    }


def event_lines(plan: Plan, timeline: Timeline) -> list[str]:
    def event(time_s: float, kind: str, node: str | None, **fields: Any) -> str:
        body = {"v": 1, "time": int(time_s * NS), "kind": kind, "node": node, **fields}
        return json.dumps(body, separators=(",", ":")) + "\n"

    end = 0.5 + timeline.duration_s
    out = [event(0.0, "workload.phase", None, phase="cluster")]
    out.append(event(0.3, "node.role", "n1", role="MASTER"))
    if plan.config.nodes > 1:
        out.append(event(0.3, "node.role", "n2", role="REPLICA"))
    out.append(event(0.5, "workload.phase", None, phase="load"))
    if timeline.fault_s is not None and timeline.failover_s is not None:
        healed = timeline.fault_s + timeline.failover_s
        out.append(event(timeline.fault_s, "fault.start", "n1", fault="kill", id="f1"))
        out.append(event(timeline.fault_s, "node.kill", "n1"))
        out.append(event(healed - 0.01, "node.role", "n2", role="MASTER"))
        out.append(event(healed - 0.01, "broker.log", "n2", code="HA-1010", text="Role MASTER"))
        out.append(event(healed + 1.0, "fault.end", "n1", fault="kill", id="f1"))
        out.append(event(healed + 1.5, "node.role", "n1", role="REPLICA"))
    out.append(event(end, "workload.phase", None, phase="heal"))
    out.append(event(end + 0.01, "workload.phase", None, phase="stop"))
    out.append(event(end + 0.02, "workload.phase", None, phase="drain"))
    out.append(event(end + 0.6, "workload.phase", None, phase="end"))
    return out


def result_of(plan: Plan, timeline: Timeline, reproduce: str) -> dict[str, Any]:
    lost = len(timeline.lost_ids)
    broken = lost > 0
    windows = []
    failover = timeline.failover_s
    if timeline.fault_s is not None and failover is not None and failover > 1.0:
        start = round(timeline.fault_s - 0.5, 3)
        windows.append(
            {
                "start_s": start,
                "end_s": round(start + failover, 3),
                "seconds": failover,
            }
        )
    unavailable = round(sum(w["seconds"] for w in windows), 3)
    two_masters = broken and plan.seed % 2 == 0
    reasons = [f"{lost} acknowledged messages lost"] if broken else []
    kinds = ["lost"] if broken else []
    if two_masters:
        reasons.append("two nodes were MASTER at the same time")
        kinds.append("two-masters")
    return {
        "v": 2,
        "scenario": plan.scenario,
        "seed": plan.seed,
        "target": "broker_ref",
        "backend": "process",
        "mode": "replicated-group",
        "verdict": "broken" if broken else "held",
        "reasons": reasons,
        "violations": sorted(kinds),
        "prediction": "no acknowledged message is lost",
        "check": {
            "valid": not broken,
            "attempted": timeline.acknowledged,
            "acknowledged": timeline.acknowledged,
            "failed": 0,
            "indeterminate": 0,
            "received": timeline.received,
            "lost": {"count": lost, "ids": list(timeline.lost_ids)},
            "unexpected": {"count": 0, "ids": []},
            "resurrected": {"count": 0, "ids": []},
            "recovered": {"count": 0, "ids": []},
            "duplicated": {"count": timeline.duplicated, "ids": []},
            "duplicate_deliveries": timeline.duplicated,
        },
        "metrics": {
            "operations": timeline.operations,
            "acknowledged_sends": timeline.acknowledged,
            "received": timeline.received + timeline.duplicated,
            "workload_s": timeline.duration_s,
            "acknowledged_per_s": round(timeline.acknowledged / timeline.duration_s, 1),
            "unavailability_threshold_s": 1.0,
            "unavailable_windows": windows,
            "unavailable_total_s": unavailable,
            "unavailable_longest_s": max((w["seconds"] for w in windows), default=0.0),
            "failover_s": [] if timeline.failover_s is None else [timeline.failover_s],
            "masters": [{"time_s": 0.3, "node": "n1", "role": "MASTER"}],
            "two_masters_seen": two_masters,
        },
        "reproduce": reproduce,
    }
