"""`incident`: a hand-written incident (`lab run --spec FILE`), judged by the promise every
HA design of the documents makes under its settings: no acknowledged message is lost.

Its schedule is the file's; `lab run incident` without a file is refused. A file may name
another scenario instead, to be judged by that scenario's prediction.
"""

from __future__ import annotations

import random

from lab.ground.cluster_settings import ACTIVE_PASSIVE
from lab.ground.faultops import FaultOp
from lab.ground.spec import GroupSettings, RunSpec, Topology
from lab.judge.prediction import Prediction
from scenarios.base import Scenario

__all__ = ["INCIDENT"]

_PREDICTION = Prediction(
    text="whatever the incident's faults, no acknowledged message is lost; duplicates allowed",
)


def _from_the_file(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
    return spec.schedule


INCIDENT = Scenario(
    name="incident",
    summary="a hand-written incident: `lab run --spec FILE` (TOML or JSON, see docs/campaigns.md)",
    prediction=_PREDICTION,
    schedule=_from_the_file,
    topology=Topology(nodes=3),
    needs_spec=True,
    twin=Scenario(
        name="incident",
        summary="a hand-written incident on an active-passive cluster",
        prediction=_PREDICTION,
        schedule=_from_the_file,
        topology=Topology(nodes=3),
        group=GroupSettings(mode=ACTIVE_PASSIVE),
        needs_spec=True,
    ),
)
