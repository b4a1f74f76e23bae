"""failover: seconds from a master kill -9 under load to the first acknowledged send on
the new master, over many trials on one group of three.

One producer (200 msg/s) and one consumer run throughout. Each trial waits for a ready
group, kills the master, times the first acknowledgement from another node, then
restarts the killed node and waits until it is a replica again.

In active-passive mode (`--mode active-passive`) the cluster manager does what the
elections do in a replicated group: it finds the primary gone on its next poll (every
0.5 s here), promotes a ready backup and restarts the killed broker itself; the new
primary acknowledges once it is active (the other backup ready again, or ha-backup-timeout).
The replicated group is measured in the same run, beside it. With `--target artemis`
(`--mode active-passive`), Artemis's brokers activate themselves (a file lock; failback off, so
a restarted broker stays a backup) and are measured beside broker_ref's active-passive
cluster; each trial restarts every broker that is down (a backup waiting to pair with a
primary that dies may stop itself).
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from lab.backends.catalog import make_cluster
from lab.bench._base import Benchmark, Say
from lab.ground.cluster_settings import ACTIVE_PASSIVE, SELF_ACTIVATED, ActivePassiveSettings
from lab.ground.events import NoEvents
from lab.ground.spec import Durability, GroupSettings, Topology, Workload
from lab.run.folder import HistoryRecorder
from lab.run.workers import WorkerProcess, worker_plans
from lab.targets.catalog import make_target

__all__ = ["BENCHMARK", "percentile"]

TRIALS = 20
SETTLE_S = 0.5
GIVE_UP_S = 15.0
TARGET_P50_S = 1.5
TARGET_P99_S = 3.0
POLL_S = 0.5
ACTIVE_PASSIVE_GROUP = GroupSettings(
    mode=ACTIVE_PASSIVE,
    active_passive=ActivePassiveSettings(
        ha_replicate="all",
        ha_backup_timeout_s=3.0,
        link_heartbeat_interval_s=1.0,
        link_maintenance_interval_s=0.2,
        status_poll_interval_s=POLL_S,
    ),
)


class _AckWatcher(HistoryRecorder):
    """A history recorder that also keeps each acknowledged send's (time, node)."""

    def __init__(self, path: Path, run_start_ns: int) -> None:
        super().__init__(path)
        self._run_start_ns = run_start_ns
        self._acks: list[tuple[int, str | None]] = []
        self._acks_lock = threading.Lock()

    def record(self, op: dict[str, Any]) -> None:
        super().record(op)
        if op.get("f") == "send" and op.get("type") == "ok":
            with self._acks_lock:
                self._acks.append((self._run_start_ns + int(op["time"]), op.get("node")))

    def first_ack_after(self, since_ns: int, not_on: str) -> int | None:
        with self._acks_lock:
            return next((t for t, n in self._acks if t > since_ns and n != not_on), None)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100), interpolated between the closest ranks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _trial(cluster: Any, watcher: _AckWatcher, managed: bool, give_up_s: float) -> float:
    master = cluster.wait_ready()
    time.sleep(SETTLE_S)
    killed_at = time.monotonic_ns()
    cluster.kill(master)
    deadline = time.monotonic() + give_up_s
    found = None
    while found is None and time.monotonic() < deadline:
        time.sleep(0.01)
        found = watcher.first_ack_after(killed_at, master)
    if not managed:  # in active-passive mode the cluster manager restarts it
        for name in cluster.node_names:
            if not cluster.node(name).running:
                cluster.restart(name)
    if found is None:
        raise RuntimeError(f"no acknowledged send within {give_up_s} s of killing {master}")
    return (found - killed_at) / 1e9


def _times(target: str, say: Say, group: GroupSettings | None = None) -> list[float]:
    group = group or GroupSettings()
    label = f"{target} ({group.mode})"
    node_target = make_target(target)
    give_up_s = GIVE_UP_S + node_target.election_allowance_s
    times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="lab-bench-failover-") as tmp:
        root = Path(tmp)
        cluster = make_cluster(
            "process", node_target, Topology(nodes=3), Durability(), root, group=group
        )
        run_start = time.monotonic_ns()
        watcher = _AckWatcher(root / "history.jsonl", run_start)
        workers: list[WorkerProcess] = []
        try:
            cluster.start()
            workload = Workload(producers=1, consumers=1, rate=200.0)
            plans = worker_plans(workload, cluster.client_urls(), cluster.node_names, run_start)
            workers = [WorkerProcess(p, watcher, root, NoEvents()) for p in plans]
            for worker in workers:
                worker.start()
            for trial in range(TRIALS):
                seconds = _trial(cluster, watcher, cluster.has_manager, give_up_s)
                times.append(seconds)
                say(f"{label} trial {trial + 1}/{TRIALS}: {seconds:.3f} s")
            cluster.wait_ready()
        finally:
            for worker in workers:
                worker.terminate()
            watcher.close()
            cluster.stop()
    return times


def _summary(times: list[float]) -> str:
    return (
        f"p50 {statistics.median(times):.3f} s, p99 {percentile(times, 99):.3f} s, "
        f"worst {max(times):.3f} s"
    )


def run(say: Say) -> str:
    times = _times("broker_ref", say)
    return (
        f"failover: {_summary(times)} from a master kill -9 to the first acknowledged send on "
        f"the new master ({TRIALS} trials, 3 nodes; target p50 <= {TARGET_P50_S} s, "
        f"p99 <= {TARGET_P99_S} s)"
    )


def run_against(say: Say, target: str) -> str:
    """broker_ref, then `target`, on the same machine in the same run."""
    ours = _times("broker_ref", say)
    say(f"failover broker_ref: {_summary(ours)}")
    theirs = _times(target, say)
    say(f"failover {target}: {_summary(theirs)}")
    ratio = statistics.median(theirs) / statistics.median(ours)
    return (
        f"failover: {target} p50 {statistics.median(theirs):.3f} s vs broker_ref "
        f"{statistics.median(ours):.3f} s ({ratio:.1f}x; p99 {percentile(theirs, 99):.3f} vs "
        f"{percentile(ours, 99):.3f} s) from a master kill -9 to the first acknowledged send "
        f"on the new master ({TRIALS} trials each, 3 nodes, local processes)"
    )


def run_mode(say: Say, mode: str) -> str:
    """The replicated group, then an active-passive cluster, on the same machine in one run."""
    if mode != ACTIVE_PASSIVE:
        return run(say)
    group = _times("broker_ref", say)
    say(f"failover replicated-group: {_summary(group)}")
    cluster = _times("broker_ref", say, ACTIVE_PASSIVE_GROUP)
    say(f"failover active-passive: {_summary(cluster)}")
    ratio = statistics.median(cluster) / statistics.median(group)
    return (
        f"failover: active-passive p50 {statistics.median(cluster):.3f} s, p99 "
        f"{percentile(cluster, 99):.3f} s vs replicated group p50 "
        f"{statistics.median(group):.3f} s, p99 {percentile(group, 99):.3f} s ({ratio:.1f}x) "
        f"from a primary kill -9 to the first acknowledged send on the new primary "
        f"({TRIALS} trials each, 3 brokers, manager poll {POLL_S} s; target p50 <= "
        f"{TARGET_P50_S} s)"
    )


SELF_ACTIVATED_GROUP = replace(
    ACTIVE_PASSIVE_GROUP,
    active_passive=ACTIVE_PASSIVE_GROUP.active_passive.with_changes(activation=SELF_ACTIVATED),
    target_context={"artemis": {"failback": "false"}},
)


def run_mode_against(say: Say, mode: str, target: str) -> str:
    """broker_ref's active-passive cluster (its manager promotes), then `target`'s (its
    brokers activate themselves), on the same machine in one run."""
    if mode != ACTIVE_PASSIVE:
        return run_against(say, target)
    ours = _times("broker_ref", say, ACTIVE_PASSIVE_GROUP)
    say(f"failover broker_ref active-passive: {_summary(ours)}")
    theirs = _times(target, say, SELF_ACTIVATED_GROUP)
    say(f"failover {target} active-passive: {_summary(theirs)}")
    ratio = statistics.median(theirs) / statistics.median(ours)
    return (
        f"failover: {target} p50 {statistics.median(theirs):.3f} s vs broker_ref "
        f"active-passive {statistics.median(ours):.3f} s ({ratio:.1f}x; p99 "
        f"{percentile(theirs, 99):.3f} vs {percentile(ours, 99):.3f} s) from a primary kill -9 "
        f"to the first acknowledged send on the new primary ({TRIALS} trials each, 3 brokers, "
        f"local processes; broker_ref's manager polling every {POLL_S} s, {target}'s brokers "
        "activating themselves)"
    )


BENCHMARK = Benchmark(
    name="failover",
    description="master kill -9 under load on 3 nodes: p50/p99 seconds to the new master's "
    "first acknowledged send",
    run=run,
    run_against=run_against,
    run_mode=run_mode,
    run_mode_against=run_mode_against,
)
