"""node-memory: whether a broker_ref node's memory grows with its log, and what a restart on
that log costs at its peak.

One node on local processes under a steady load (`clients.bench_load`: 2 producers and 6
consumers, 10 messages in flight each, so the queue stays short): the node's RSS once
`WARMUP` messages went through, then at every `STEP` more up to `MESSAGES`, in bytes a
message between the first and the last. Then the node is stopped and started again on
its log; its peak RSS (VmHWM) once it serves again is what reading the log back took.
Then the same for a group of 3 (every node's RSS, the master restarted), up to
`GROUP_MESSAGES`.
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
GROUP_MESSAGES = 220_000
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


def run_messages(say: Say, messages: int = MESSAGES, step: int = STEP, nodes: int = 1) -> str:
    with tempfile.TemporaryDirectory(prefix="lab-bench-node-memory-") as tmp:
        cluster = make_cluster(
            "process", make_target("broker_ref"), Topology(nodes=nodes), Durability(), Path(tmp)
        )
        try:
            cluster.start()
            node = cluster.node_names[0]
            pids = {name: cluster.pids()[name] for name in cluster.node_names}
            samples: list[tuple[int, int]] = []
            with running_load(
                cluster.client_urls(), PRODUCERS, CONSUMERS, "q", Path(tmp), window=WINDOW
            ) as count:
                for mark in range(WARMUP, messages + 1, step):
                    received = _received_at_least(count, mark)
                    each = {name: memory_kib(pid) for name, pid in pids.items()}
                    samples.append((received, sum(each.values())))
                    say(f"  {received:,} messages: RSS {each} KiB")
            log_mib = _log_mib(Path(tmp), node)
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
    per_message = (last_kib - first_kib) * 1024 / max(1, last - first) / nodes
    return (
        f"{'one node' if nodes == 1 else f'group of {nodes}'}: RSS {first_kib:,} KiB at "
        f"{first:,} messages → {last_kib:,} KiB at {last:,} ({per_message:.2f} B a message a "
        f"node); {node} restarted on its {log_mib:.0f} MiB log: peak RSS {peak / 1024:.0f} MiB"
    )


def run(say: Say) -> str:
    """A single node, then a group of 3 (the replication stream's state included)."""
    single = run_messages(say)
    say(single)
    group = run_messages(say, GROUP_MESSAGES, nodes=3)
    return f"node memory: {single}; {group}"


def _log_mib(root: Path, node: str) -> float:
    """The size of `node`'s log (its data folder is named after it)."""
    found = [p for p in root.rglob("store.log") if node in p.relative_to(root).parts]
    return sum(p.stat().st_size for p in found) / (1 << 20)


BENCHMARK = Benchmark(
    name="node-memory",
    description="a broker_ref node's RSS under steady load (B a message) and its peak on restart",
    run=run,
)
