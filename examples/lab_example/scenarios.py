"""`example-failover`: the user's own scenario, run by name once the package is installed
(`lab run example-failover --target example-broker`, campaigns, the pytest plugin).

Three nodes under eight seconds of load; kill -9 the master at a moment drawn from the run's seed,
restart it two seconds later. The prediction: nothing acknowledged is lost, never two
masters, and the clients are served again within the user's own bound (FailedOverWithin).
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
