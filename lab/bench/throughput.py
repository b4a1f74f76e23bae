"""throughput: acknowledged messages per second through one node, with and without Toxiproxy."""

from __future__ import annotations

import tempfile
from pathlib import Path

from lab.backends.catalog import make_cluster
from lab.bench._base import Benchmark, Say
from lab.bench.load import acknowledged_per_second
from lab.ground.spec import Durability, Topology, Workload
from lab.targets.broker_ref import BrokerRefTarget

__all__ = ["BENCHMARK"]

SECONDS = 10.0
WARMUP_S = 2.0


def _measure(urls: list[str], nodes: tuple[str, ...], work_dir: Path, say: Say) -> float:
    workload = Workload(producers=1, consumers=1, rate=0.0, size=100, window=200)
    rate = acknowledged_per_second(
        workload, urls, nodes, work_dir, warmup_s=WARMUP_S, measure_s=SECONDS
    )
    say(f"  {rate:,.0f} acknowledged/s")
    return rate


def run(say: Say) -> str:
    with tempfile.TemporaryDirectory(prefix="lab-bench-throughput-") as tmp:
        root = Path(tmp)
        cluster = make_cluster("process", BrokerRefTarget(), Topology(nodes=1), Durability(), root)
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
