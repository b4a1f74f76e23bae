"""J12 of docs/scenarios.md: the master's disk fills while a replica is down.

Disk space requirements (the Java broker 0.18 HA guide, 1.6.10): while a replica
is down the master keeps the log it will need, and the disk may fill. The lab fills
the master's data disk to ENOSPC and frees it later: each node's data lives on a
size-limited tmpfs (a Docker volume in containers; on local processes a tmpfs the run
mounts on each data folder, as root).
"""

from __future__ import annotations

import random

from lab.ground.faultops import FaultOp
from lab.ground.spec import RunSpec, Topology, Workload
from lab.judge.expectations import LogSeen, ServiceResumed
from lab.judge.prediction import Prediction
from scenarios.base import Scenario, fault_window, uniform

__all__ = ["DISK_FULL"]


def _fill_with_a_replica_down(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """A replica down from 2–3 s; the master's disk full 2–3 s later for 3–4 s; the
    replica back 1.5 s after the disk is freed."""
    down_at = uniform(rng, 2.0, 3.0)
    fill_at = down_at + uniform(rng, 2.0, 3.0)
    full_for = uniform(rng, 3.0, 4.0)
    back_at = fill_at + full_for + 1.5
    return (
        *fault_window("kill", "@replica:1", down_at, back_at - down_at, "f1"),
        *fault_window("disk_fill", "@master", fill_at, full_for, "f2"),
    )


DISK_FULL = Scenario(
    name="disk-full",
    summary="J12: a replica down, fill the master's disk, free it (Docker, or processes as root)",
    prediction=Prediction(
        text="a full disk refuses publishes (rejected, resource-limit-exceeded) instead of "
        "acknowledging and then dropping them; no acknowledged message lost; service "
        "resumes when space returns",
        two_masters="forbidden",
        refusals_expected=True,
        expect=(
            LogSeen("REF-1002", node="f2", after="f2:start"),
            LogSeen("REF-1003", node="f2", after="f2:start"),
            ServiceResumed("f2:end", within_s=5.0),
        ),
    ),
    schedule=_fill_with_a_replica_down,
    topology=Topology(nodes=3),
    workload=Workload(producers=2, consumers=1, rate=100.0, duration_s=16.0),
    backends=("docker", "process"),
)
