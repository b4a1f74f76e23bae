"""The user's own scenarios, run by name once the package is installed (`lab run
example-failover --target example-broker`, campaigns, the nightly, the pytest plugin).

`example-failover`: three nodes under eight seconds of load; kill -9 the master at a moment
drawn from the run's seed, restart it two seconds later. The prediction: nothing
acknowledged is lost, never two masters, and the clients are served again within the user's
own bound (FailedOverWithin).

`example-isolated-master`: the replicas trail the master (150 ms on its links to them); then
the master is cut off from its peers for six seconds, longer than its lease, while its
clients still reach it; it rejoins the master the others elected. The prediction: nothing
acknowledged is lost — a master may only acknowledge what a majority holds, so whatever it
took alone and discards on rejoining was never acknowledged.
"""

from __future__ import annotations

import random

from lab.api import (
    FaultOp,
    Prediction,
    RoleAtEnd,
    RunSpec,
    Scenario,
    Topology,
    Workload,
    fault_window,
    uniform,
)
from lab_example.prediction import FailedOverWithin


def _kill_the_master(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """kill -9 the master 1–1.5 s into the load; restart it 2 s later."""
    return fault_window("kill", "@master", uniform(rng, 1.0, 1.5), 2.0, "f1")


_TRAILING: dict[str, int | float | str | bool] = {"latency_ms": 150, "jitter_ms": 0}


def _cut_the_trailing_master(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    """150 ms on the master's links to both replicas from 0.5 s; the master isolated 4–5 s
    into the load, for 6 s (its lease ends, and the others have time to elect, on a busy
    machine too)."""
    cut = uniform(rng, 4.0, 5.0)
    return (
        *fault_window("latency", "@master_to_@replica:1", 0.5, 13.0, "l1", **_TRAILING),
        *fault_window("latency", "@master_to_@replica:2", 0.5, 13.0, "l2", **_TRAILING),
        *fault_window("isolate", "@master", cut, 6.0, "f1"),
    )


EXAMPLE_ISOLATED_MASTER = Scenario(
    name="example-isolated-master",
    summary="the example's own: replicas trailing, the master cut off from them past its lease",
    prediction=Prediction(text="no acknowledged message is lost"),
    schedule=_cut_the_trailing_master,
    topology=Topology(nodes=3),
    workload=Workload(
        producers=2, consumers=1, rate=100.0, duration_s=14.0, consume_during_load=False
    ),
)

EXAMPLE_FAILOVER = Scenario(
    name="example-failover",
    summary="the example's own: kill -9 the master under a short load, restart it",
    prediction=Prediction(
        text="no acknowledged message is lost, never two masters, clients served again "
        "within 30 s (a generous bound: the machine may be busy), the old master back as a "
        "replica",
        two_masters="forbidden",
        expect=(FailedOverWithin("f1", seconds=30.0), RoleAtEnd("f1", "REPLICA")),
    ),
    schedule=_kill_the_master,
    topology=Topology(nodes=3),
    workload=Workload(producers=1, consumers=1, rate=100.0, duration_s=8.0),
)
