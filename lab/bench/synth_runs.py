"""Synthetic run stores in the real layout, for tests and the `report` benchmark.

`synthesize_runs(root, runs=N, operations_per_run=K, seed=S)` writes N run folders
`root/<scenario>/<stamp>-<seed>/` with spec.json, schedule.jsonl, history.jsonl,
events.jsonl and result.json, deterministic for S:

    durability-throughput   no faults; every durability configuration of the seeds'
                            performance table (1 node = "No HA", five 2-node ones) and
                            client counts 1/1 … 64/64; throughput and latency scale with
                            the seeds' figures
    master-crash            2 nodes, the master is killed at 40 % of the run: acks stop
                            for the failover time, in-flight sends are retried; about one
                            run in six loses acknowledged messages (broken), later lab
                            revisions fail over more slowly

The runs spread over `days` UTC days and three lab revisions. `partial` runs are defective
the ways a real store is: killed (torn last history line, no result.json), a result.json
with an `error`, an unparsable spec.json, a missing result.json.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import shlex
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

__all__ = ["CONFIGS", "REVISIONS", "SynthConfig", "SynthStore", "synthesize_runs"]

REVISIONS = ("1a2b3c4", "5d6e7f8", "9a0b1c2")
CLIENTS = (1, 2, 4, 8, 16, 32, 64)
START = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)
NS = 1_000_000_000
Defect = Literal["killed", "error", "bad-spec", "no-result"]
DEFECTS: tuple[Defect, ...] = ("killed", "error", "bad-spec", "no-result")


@dataclass(frozen=True)
class SynthConfig:
    """A durability configuration and how fast it is relative to a single node."""

    nodes: int
    master_sync: str
    replica_sync: str
    ack_policy: str
    coalescing_sync: bool
    speed: float


CONFIGS = (
    SynthConfig(1, "NO_SYNC", "NO_SYNC", "SIMPLE_MAJORITY", False, 1.0),
    SynthConfig(2, "SYNC", "SYNC", "ALL", False, 0.12),
    SynthConfig(2, "WRITE_NO_SYNC", "WRITE_NO_SYNC", "ALL", False, 0.8),
    SynthConfig(2, "WRITE_NO_SYNC", "WRITE_NO_SYNC", "ALL", True, 0.2),
    SynthConfig(2, "WRITE_NO_SYNC", "NO_SYNC", "ALL", True, 0.2),
    SynthConfig(2, "NO_SYNC", "NO_SYNC", "ALL", True, 0.5),
)


@dataclass(frozen=True)
class SynthStore:
    """What was written: run ids (`<scenario>/<folder>`) by what they should be reported as."""

    root: Path
    runs: int
    operations: int
    broken: tuple[str, ...]
    unreadable: tuple[str, ...]


@dataclass(frozen=True)
class _Plan:
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


def synthesize_runs(
    root: Path,
    *,
    runs: int,
    operations_per_run: int,
    seed: int,
    partial: int = 4,
    days: int = 5,
    workers: int = 1,
    say: Callable[[str], None] = lambda text: None,
) -> SynthStore:
    """Write `runs` run folders under `root` (about `operations_per_run` history lines each)."""
    if operations_per_run < 100:
        raise ValueError("synthesize_runs needs at least 100 operations per run")
    rng = random.Random(seed)
    defective = dict(zip(rng.sample(range(runs), min(partial, runs)), DEFECTS * runs, strict=False))
    plans = [
        _plan(root, number, runs, days, operations_per_run, defective, rng)
        for number in range(runs)
    ]
    written = 0
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for done, count in enumerate(pool.map(_write_run, plans, chunksize=8), start=1):
                written += count
                if done % 100 == 0:
                    say(f"  {done}/{runs} runs, {written:,} operations")
    else:
        for done, plan in enumerate(plans, start=1):
            written += _write_run(plan)
            if done % 100 == 0:
                say(f"  {done}/{runs} runs, {written:,} operations")
    return SynthStore(
        root=root,
        runs=runs,
        operations=written,
        broken=tuple(_run_id(p) for p in plans if p.lose and p.defect is None),
        unreadable=tuple(_run_id(p) for p in plans if p.defect is not None),
    )


def _run_id(plan: _Plan) -> str:
    return f"{plan.scenario}/{_folder_name(plan)}"


def _folder_name(plan: _Plan) -> str:
    return f"{plan.stamp.strftime('%Y%m%dT%H%M%SZ')}-{plan.seed}"


def _plan(
    root: Path,
    number: int,
    runs: int,
    days: int,
    operations: int,
    defective: dict[int, Defect],
    rng: random.Random,
) -> _Plan:
    crash = number % 3 == 2
    config = rng.choice(CONFIGS[1:] if crash else CONFIGS)
    clients = rng.choice(CLIENTS[:4]) if crash else CLIENTS[number % len(CLIENTS)]
    offset = dt.timedelta(seconds=(number * days * 86_400) // max(1, runs) + rng.randrange(60))
    return _Plan(
        root=root,
        number=number,
        scenario="master-crash" if crash else "durability-throughput",
        seed=rng.randrange(1, 2**31),
        stamp=START + offset,
        revision=REVISIONS[number * len(REVISIONS) // max(1, runs)],
        config=config,
        clients=clients,
        operations=operations,
        lose=rng.randrange(1, 6) if crash and rng.random() < 1 / 6 else 0,
        defect=defective.get(number),
    )


@dataclass(frozen=True)
class _Timeline:
    """The run's figures that result.json and events.jsonl report."""

    duration_s: float
    fault_s: float | None
    failover_s: float | None
    acknowledged: int
    received: int
    duplicated: int
    operations: int
    lost_ids: tuple[str, ...]


def _write_run(plan: _Plan) -> int:
    folder = plan.root / plan.scenario / _folder_name(plan)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(plan.seed)
    lines, timeline = _history(plan, rng)
    spec = _spec(plan, timeline)
    if plan.defect == "bad-spec":
        (folder / "spec.json").write_text('{"scenario": "' + plan.scenario + '", "seed": ', "utf-8")
    else:
        (folder / "spec.json").write_text(json.dumps(spec, indent=2) + "\n", "utf-8")
    schedule = [{"phase": "planned", **op} for op in spec["schedule"]]
    (folder / "schedule.jsonl").write_text("".join(json.dumps(op) + "\n" for op in schedule))
    events = _events(plan, timeline)
    if plan.defect == "killed":
        cut = len(lines) * 2 // 3
        torn = lines[cut][: len(lines[cut]) // 2]
        (folder / "history.jsonl").write_text("".join(lines[:cut]) + torn, "utf-8")
        (folder / "events.jsonl").write_text("".join(events[:-3]), "utf-8")
        return cut
    (folder / "history.jsonl").write_text("".join(lines), "utf-8")
    (folder / "events.jsonl").write_text("".join(events), "utf-8")
    reproduce = f".venv/bin/lab replay {shlex.quote(str(folder))}"
    if plan.defect == "error":
        result: dict[str, Any] = {
            "v": 1,
            "scenario": plan.scenario,
            "seed": plan.seed,
            "verdict": "unknown",
            "error": "ClusterError: node n2 did not become ready in 30 s",
            "reproduce": reproduce,
        }
    else:
        result = _result(plan, timeline, reproduce)
    if plan.defect != "no-result":
        (folder / "result.json").write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    return len(lines)


def _history(plan: _Plan, rng: np.random.Generator) -> tuple[list[str], _Timeline]:
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
    return lines, _Timeline(
        duration_s=round(duration, 3),
        fault_s=fault_s,
        failover_s=failover_s,
        acknowledged=messages,
        received=int(delivered.size),
        duplicated=int(twice.size),
        operations=len(lines),
        lost_ids=tuple(sorted(values[m].strip('"') for m in np.flatnonzero(lost).tolist())),
    )


def _spec(plan: _Plan, timeline: _Timeline) -> dict[str, Any]:
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


def _events(plan: _Plan, timeline: _Timeline) -> list[str]:
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


def _result(plan: _Plan, timeline: _Timeline, reproduce: str) -> dict[str, Any]:
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
    return {
        "v": 1,
        "scenario": plan.scenario,
        "seed": plan.seed,
        "target": "broker_ref",
        "backend": "process",
        "verdict": "broken" if broken else "held",
        "reasons": [f"{lost} acknowledged messages lost"] if broken else [],
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
            "two_masters_seen": broken and plan.seed % 2 == 0,
        },
        "reproduce": reproduce,
    }
