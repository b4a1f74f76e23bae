"""startup: seconds from `lab up` (one node, Toxiproxy, proxies) to the first acknowledged send."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from lab.backends.catalog import make_cluster
from lab.bench._base import Benchmark, Say
from lab.bench.probe import send_one
from lab.ground.spec import Durability, Topology
from lab.targets.broker_ref import BrokerRefTarget

__all__ = ["BENCHMARK"]

TRIALS = 5


def _one(work_dir: Path, nodes: int = 1) -> float:
    started = time.perf_counter()
    cluster = make_cluster(
        "process", BrokerRefTarget(), Topology(nodes=nodes), Durability(), work_dir
    )
    try:
        master = cluster.start()
        send_one(cluster.client_urls()[cluster.node_names.index(master)])
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


def run_on(say: Say, backend: str) -> str:
    """The Docker figures (image build from nothing, a 3-node group ready) beside the
    process backend's, measured in the same run."""
    if backend == "process":
        return run(say)
    from lab.bench.docker_startup import measure_image_build, measure_startup

    build_s = measure_image_build(say)
    docker_s = [measure_startup(3, say) for _ in range(3)]
    say("the process backend, for comparison (3 nodes)")
    process_s = []
    with tempfile.TemporaryDirectory(prefix="lab-bench-startup-") as tmp:
        for trial in range(3):
            process_s.append(_one(Path(tmp) / f"t{trial}", nodes=3))
    return (
        f"startup --backend docker: image build from nothing {build_s:.1f} s (target <= 90 s); "
        f"3-node group to the first acknowledged message: median "
        f"{statistics.median(docker_s):.2f} s in containers (target <= 5 s) vs "
        f"{statistics.median(process_s):.2f} s as local processes"
    )


BENCHMARK = Benchmark(
    name="startup",
    description="seconds from `lab up` (1 node, Toxiproxy, proxies) to the first acknowledged send",
    run=run,
    run_on=run_on,
)
