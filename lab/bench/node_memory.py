"""node-memory: whether a broker_ref node's memory grows with its log, and what a restart on
that log costs at its peak.

One node on local processes under a steady load (`clients.bench_load`: 2 producers and 6
consumers, 10 messages in flight each, so the queue stays short): the node's RSS once
`WARMUP` messages went through, then at every `STEP` more up to `MESSAGES`, in bytes a
message between the first and the last. Then the node is stopped and started again on
its log; its peak RSS (VmHWM) once it serves again is what reading the log back took.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from faults.abilities import Stoppable
from lab.backends.catalog import make_cluster
from lab.bench._base import Benchmark, Say
from lab.bench.load import Counts, running_load
from lab.ground.errors import LabError
from lab.ground.spec import Durability, Topology
from lab.targets.catalog import make_target

__all__ = ["BENCHMARK", "memory_kib", "run_messages"]

WARMUP = 20_000
STEP = 100_000
MESSAGES = 420_000
PRODUCERS, CONSUMERS, WINDOW = 2, 6, 10
STALL_S = 60.0  # no message received for this long: the load is stuck


def memory_kib(pid: int, field: str = "VmRSS") -> int:
    """A process's `field` (VmRSS, VmHWM) from /proc, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise LabError(f"no {field} for process {pid}")


def _received_at_least(count: Counts, messages: int) -> int:
    last, since = -1, time.monotonic()
    while True:
        received = int(count()["received"])
        if received >= messages:
            return received
        if received != last:
            last, since = received, time.monotonic()
        elif time.monotonic() - since > STALL_S:
            raise LabError(f"the load received nothing for {STALL_S:.0f} s (at {received:,})")
        time.sleep(1.0)


def run_messages(say: Say, messages: int = MESSAGES, step: int = STEP) -> str:
    with tempfile.TemporaryDirectory(prefix="lab-bench-node-memory-") as tmp:
        cluster = make_cluster(
            "process", make_target("broker_ref"), Topology(nodes=1), Durability(), Path(tmp)
        )
        try:
            cluster.start()
            node = cluster.node_names[0]
            pid = cluster.pids()[node]
            samples: list[tuple[int, int]] = []
            with running_load(
                cluster.client_urls(), PRODUCERS, CONSUMERS, "q", Path(tmp), window=WINDOW
            ) as count:
                for mark in range(WARMUP, messages + 1, step):
                    received = _received_at_least(count, mark)
                    samples.append((received, memory_kib(pid)))
                    say(f"  {received:,} messages: RSS {samples[-1][1]:,} KiB")
            log_mib = _log_mib(Path(tmp))
            if not isinstance(cluster, Stoppable):
                raise LabError("the process backend's cluster cannot stop a node")
            cluster.stop_node(node)
            started = time.monotonic()
            cluster.restart(node)
            cluster.wait_ready()
            restart_s = time.monotonic() - started
            peak = memory_kib(cluster.pids()[node], "VmHWM")
            say(f"  restarted on its {log_mib:.0f} MiB log in {restart_s:.1f} s")
        finally:
            cluster.stop()
    (first, first_kib), (last, last_kib) = samples[0], samples[-1]
    per_message = (last_kib - first_kib) * 1024 / max(1, last - first)
    return (
        f"node memory: RSS {first_kib:,} KiB at {first:,} messages → {last_kib:,} KiB at "
        f"{last:,} ({per_message:.2f} B a message); restart on its {log_mib:.0f} MiB log: "
        f"peak RSS {peak / 1024:.0f} MiB"
    )


def _log_mib(root: Path) -> float:
    return sum(p.stat().st_size for p in root.rglob("store.log")) / (1 << 20)


BENCHMARK = Benchmark(
    name="node-memory",
    description="a broker_ref node's RSS under steady load (B a message) and its peak on restart",
    run=run_messages,
)
