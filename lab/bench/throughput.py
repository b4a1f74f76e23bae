"""throughput: acknowledged messages per second through one node, with and without Toxiproxy."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from lab.backends import make_cluster
from lab.bench._base import Benchmark, Say
from lab.events import NoEvents
from lab.runstore import HistoryRecorder
from lab.spec import Durability, Topology, Workload
from lab.workers import WorkerProcess, worker_plans

__all__ = ["BENCHMARK"]

SECONDS = 10.0
WARMUP_S = 2.0


def _measure(urls: list[str], nodes: tuple[str, ...], work_dir: Path, say: Say) -> float:
    workload = Workload(producers=1, consumers=1, rate=0.0, size=100, window=200)
    recorder = HistoryRecorder(work_dir / "history.jsonl")
    workers = [
        WorkerProcess(plan, recorder, work_dir, NoEvents())
        for plan in worker_plans(workload, urls, nodes, time.monotonic_ns())
    ]
    try:
        for worker in workers:
            worker.start()
        time.sleep(WARMUP_S)
        first = recorder.acknowledged
        time.sleep(SECONDS)
        rate = (recorder.acknowledged - first) / SECONDS
        say(f"  {rate:,.0f} acknowledged/s (received so far {recorder.received})")
        return rate
    finally:
        for worker in workers:
            worker.terminate()
        recorder.close()


def run(say: Say) -> str:
    with tempfile.TemporaryDirectory(prefix="lab-bench-throughput-") as tmp:
        root = Path(tmp)
        cluster = make_cluster("process", "broker_ref", Topology(nodes=1), Durability(), root)
        try:
            cluster.start()
            say(f"through Toxiproxy, {SECONDS:.0f} s, 1 producer / 1 consumer, 100-byte messages")
            (root / "proxied").mkdir()
            proxied = _measure(cluster.client_urls(), cluster.node_names, root / "proxied", say)
            say(f"direct to the node, {SECONDS:.0f} s")
            (root / "direct").mkdir()
            direct = _measure(cluster.direct_urls(), cluster.node_names, root / "direct", say)
        finally:
            cluster.stop()
    ratio = proxied / direct if direct else float("nan")
    return (
        f"throughput: {proxied:,.0f} acknowledged msg/s through Toxiproxy, {direct:,.0f} direct; "
        f"proxied/direct = {ratio:.2f}"
    )


BENCHMARK = Benchmark(
    name="throughput",
    description="acknowledged msg/s through one node (1/1 clients, 100 B), proxied and direct",
    run=run,
)
