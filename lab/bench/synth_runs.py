"""Synthetic run stores in the real layout, for tests and the `report` benchmark.

`synthesize_runs(root, runs=N, operations_per_run=K, seed=S)` writes N run folders
`root/<scenario>/<stamp>-<seed>/` with spec.json, schedule.jsonl, history.jsonl,
events.jsonl and result.json, and (`copies`) the Parquet copies the runner writes at the end
of a run (not for a killed run), deterministic for S:

    durability-throughput   no faults; every durability configuration of the seeds'
                            performance table (1 node = "No HA", five 2-node ones) and
                            client counts 1/1 … 64/64; throughput and latency scale with
                            the seeds' figures
    master-crash            2 nodes, the master is killed at 40 % of the run: acks stop
                            for the failover time, in-flight sends are retried; about one
                            run in six loses acknowledged messages (broken), later lab
                            revisions fail over more slowly

The runs spread over `days` UTC days from `start` and three lab revisions. `partial` runs
are defective the ways a real store is: killed (torn last history line, no result.json), a
result.json with an `error`, an unparsable spec.json, a missing result.json. A broken run's
result.json names its violation kinds (`lost`, and `two-masters` for one in two).
"""

from __future__ import annotations

import datetime as dt
import json
import random
import shlex
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from lab.bench.synth_run_files import (
    REVISIONS,
    Defect,
    Plan,
    SynthConfig,
    event_lines,
    history_lines,
    result_of,
    spec_of,
)
from lab.judge.columnar import write_columnar_copies

__all__ = ["CONFIGS", "REVISIONS", "SynthConfig", "SynthStore", "synthesize_runs"]

CLIENTS = (1, 2, 4, 8, 16, 32, 64)
START = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)
NS = 1_000_000_000
DEFECTS: tuple[Defect, ...] = ("killed", "error", "bad-spec", "no-result")


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


def synthesize_runs(
    root: Path,
    *,
    runs: int,
    operations_per_run: int,
    seed: int,
    partial: int = 4,
    days: int = 5,
    workers: int = 1,
    copies: bool = True,
    start: dt.datetime = START,
    say: Callable[[str], None] = lambda text: None,
) -> SynthStore:
    """Write `runs` run folders under `root` (about `operations_per_run` history lines each)."""
    if operations_per_run < 100:
        raise ValueError("synthesize_runs needs at least 100 operations per run")
    rng = random.Random(seed)
    defective = dict(zip(rng.sample(range(runs), min(partial, runs)), DEFECTS * runs, strict=False))
    plans = [
        replace(
            _plan(root, number, runs, days, operations_per_run, defective, rng, start),
            copies=copies,
        )
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


def _run_id(plan: Plan) -> str:
    return f"{plan.scenario}/{_folder_name(plan)}"


def _folder_name(plan: Plan) -> str:
    return f"{plan.stamp.strftime('%Y%m%dT%H%M%SZ')}-{plan.seed}"


def _plan(
    root: Path,
    number: int,
    runs: int,
    days: int,
    operations: int,
    defective: dict[int, Defect],
    rng: random.Random,
    start: dt.datetime = START,
) -> Plan:
    crash = number % 3 == 2
    config = rng.choice(CONFIGS[1:] if crash else CONFIGS)
    clients = rng.choice(CLIENTS[:4]) if crash else CLIENTS[number % len(CLIENTS)]
    offset = dt.timedelta(seconds=(number * days * 86_400) // max(1, runs) + rng.randrange(60))
    return Plan(
        root=root,
        number=number,
        scenario="master-crash" if crash else "durability-throughput",
        seed=rng.randrange(1, 2**31),
        stamp=start + offset,
        revision=REVISIONS[number * len(REVISIONS) // max(1, runs)],
        config=config,
        clients=clients,
        operations=operations,
        lose=rng.randrange(1, 6) if crash and rng.random() < 1 / 6 else 0,
        defect=defective.get(number),
    )


def _write_run(plan: Plan) -> int:
    folder = plan.root / plan.scenario / _folder_name(plan)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(plan.seed)
    lines, timeline = history_lines(plan, rng)
    spec = spec_of(plan, timeline)
    if plan.defect == "bad-spec":
        (folder / "spec.json").write_text('{"scenario": "' + plan.scenario + '", "seed": ', "utf-8")
    else:
        (folder / "spec.json").write_text(json.dumps(spec, indent=2) + "\n", "utf-8")
    schedule = [{"phase": "planned", **op} for op in spec["schedule"]]
    (folder / "schedule.jsonl").write_text("".join(json.dumps(op) + "\n" for op in schedule))
    events = event_lines(plan, timeline)
    if plan.defect == "killed":
        cut = len(lines) * 2 // 3
        torn = lines[cut][: len(lines[cut]) // 2]
        (folder / "history.jsonl").write_text("".join(lines[:cut]) + torn, "utf-8")
        (folder / "events.jsonl").write_text("".join(events[:-3]), "utf-8")
        return cut
    (folder / "history.jsonl").write_text("".join(lines), "utf-8")
    (folder / "events.jsonl").write_text("".join(events), "utf-8")
    reproduce = f"lab replay {shlex.quote(str(folder))}"
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
        result = result_of(plan, timeline, reproduce)
    if plan.defect != "no-result":
        (folder / "result.json").write_text(json.dumps(result, indent=2) + "\n", "utf-8")
        if plan.copies:
            write_columnar_copies(folder)
    return len(lines)
