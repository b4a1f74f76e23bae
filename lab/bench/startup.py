"""startup: seconds from `lab up` (one node, Toxiproxy, proxies) to the first acknowledged send."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from lab.amqp_probe import send_one
from lab.backends import make_cluster
from lab.bench._base import Benchmark, Say
from lab.spec import Durability, Topology

__all__ = ["BENCHMARK"]

TRIALS = 5


def _one(work_dir: Path) -> float:
    started = time.perf_counter()
    cluster = make_cluster("process", "broker_ref", Topology(nodes=1), Durability(), work_dir)
    try:
        cluster.start()
        send_one(cluster.client_urls()[0])
        return time.perf_counter() - started
    finally:
        cluster.stop()


def run(say: Say) -> str:
    times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="lab-bench-startup-") as tmp:
        for trial in range(TRIALS):
            seconds = _one(Path(tmp) / f"t{trial}")
            times.append(seconds)
            say(f"trial {trial + 1}/{TRIALS}: {seconds:.3f} s")
    return (
        f"startup: median {statistics.median(times):.3f} s, best {min(times):.3f} s, "
        f"worst {max(times):.3f} s to the first acknowledged message "
        f"(1 node + Toxiproxy, {TRIALS} trials; target <= 1 s)"
    )


BENCHMARK = Benchmark(
    name="startup",
    description="seconds from `lab up` (1 node, Toxiproxy, proxies) to the first acknowledged send",
    run=run,
)
