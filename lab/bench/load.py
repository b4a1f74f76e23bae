"""A steady workload against a running cluster, measured in acknowledged sends per second:
through the lab's recording workers (`acknowledged_per_second`), or through the one-process
load of the throughput table (`measure_cell`, `clients.bench_load`) with the CPU each side
used."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from lab.ground.children import popen_options
from lab.ground.events import NoEvents
from lab.ground.paths import LAB_ROOT
from lab.ground.spec import Workload
from lab.run.folder import HistoryRecorder
from lab.run.workers import WorkerProcess, worker_plans

__all__ = [
    "Cell",
    "Counts",
    "acknowledged_per_second",
    "cpu_seconds",
    "measure_cell",
    "running_load",
]

COUNT_TIMEOUT_S = 10.0


def acknowledged_per_second(
    workload: Workload,
    urls: list[str],
    nodes: tuple[str, ...],
    work_dir: Path,
    *,
    warmup_s: float,
    measure_s: float,
) -> float:
    """Start the workload's workers, let them warm up, count acknowledged sends for
    `measure_s` seconds; the workers are always stopped."""
    recorder = HistoryRecorder(work_dir / f"history-{workload.queue}.jsonl")
    workers = [
        WorkerProcess(plan, recorder, work_dir, NoEvents())
        for plan in worker_plans(workload, urls, nodes, time.monotonic_ns())
    ]
    try:
        for worker in workers:
            worker.start()
        time.sleep(warmup_s)
        first = recorder.acknowledged
        time.sleep(measure_s)
        return (recorder.acknowledged - first) / measure_s
    finally:
        for worker in workers:
            worker.terminate()
        recorder.close()


@dataclass(frozen=True)
class Cell:
    """One measurement of the P1 load: acknowledged msg/s, and the CPU each side used over
    the same seconds, in cores (1.0 = one core busy the whole time)."""

    rate: float
    load_cores: float
    cores: dict[str, float]  # per node, and "toxiproxy"

    def busiest_node(self) -> tuple[str, float]:
        nodes = {name: used for name, used in self.cores.items() if name != "toxiproxy"}
        name = max(nodes, key=lambda n: nodes[n]) if nodes else "-"
        return name, nodes.get(name, 0.0)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` (all its threads); 0 once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _count(process: subprocess.Popen[str], log: Path) -> dict[str, float]:
    """Ask the load process for its counts (one JSON line)."""
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write("count\n")
        process.stdin.flush()
    except BrokenPipeError:
        pass
    ready, _, _ = select.select([process.stdout], [], [], COUNT_TIMEOUT_S)
    line = process.stdout.readline() if ready else ""
    if not line:
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise RuntimeError(f"the bench load stopped answering (exit {process.poll()}): {tail}")
    counts: dict[str, float] = json.loads(line)
    return counts


Counts = Callable[[], dict[str, float]]
"""Asks a running load for its counts: acknowledged, received, cpu_s, links."""


@contextlib.contextmanager
def running_load(
    urls: list[str],
    producers: int,
    consumers: int,
    queue: str,
    work_dir: Path,
    *,
    size: int = 100,
    window: int = 100,
) -> Iterator[Counts]:
    """`clients.bench_load` (one process) against `urls` while the block runs; it yields
    the load's counts on demand and always stops the load."""
    log = work_dir / f"bench-load-{queue}.log"
    command = [sys.executable, "-m", "clients.bench_load", "--urls", ",".join(urls)]
    command += ["--queue", queue, "--producers", str(producers), "--consumers", str(consumers)]
    command += ["--size", str(size), "--window", str(window)]
    with log.open("w") as errors:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            cwd=LAB_ROOT,
            **popen_options(detached=False),
        )
    try:
        yield lambda: _count(process, log)
    finally:
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def measure_cell(
    urls: list[str],
    pids: dict[str, int],
    clients: int,
    queue: str,
    work_dir: Path,
    *,
    warmup_s: float,
    measure_s: float,
    size: int = 100,
    window: int = 100,
) -> Cell:
    """`clients` producers and as many consumers (`clients.bench_load`, one process) on a
    fresh `queue`: acknowledged msg/s over `measure_s` after `warmup_s`, with the CPU the
    load, each node and Toxiproxy (`pids`) used meanwhile. The load is always stopped."""
    with running_load(urls, clients, clients, queue, work_dir, size=size, window=window) as count:
        time.sleep(warmup_s)
        first, started = count(), time.monotonic()
        used = {name: cpu_seconds(pid) for name, pid in pids.items()}
        time.sleep(measure_s)
        last, elapsed = count(), time.monotonic() - started
        cores = {name: (cpu_seconds(pid) - used[name]) / elapsed for name, pid in pids.items()}
        return Cell(
            rate=(last["acknowledged"] - first["acknowledged"]) / elapsed,
            load_cores=(last["cpu_s"] - first["cpu_s"]) / elapsed,
            cores=cores,
        )
