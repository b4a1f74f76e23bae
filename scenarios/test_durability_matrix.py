"""J11 under a handful of the seeds' durability triplets: the prediction follows the ack policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.ground.spec import Durability
from lab.run.runner import reproduce_command, run_scenario
from scenarios.catalog import scenario_named

TRIPLETS = (
    ("NO_SYNC,NO_SYNC,NONE", True),
    ("SYNC,SYNC,ALL", False),
    ("WRITE_NO_SYNC,WRITE_NO_SYNC,ALL", True),
    ("WRITE_NO_SYNC,NO_SYNC,SIMPLE_MAJORITY", False),
)


@pytest.mark.processes
@pytest.mark.parametrize(
    ("triplet", "coalescing"),
    TRIPLETS,
    ids=[f"{t}{'+cs' if c else ''}" for t, c in TRIPLETS],
)
def test_durability_matrix_holds_its_prediction(
    triplet: str, coalescing: bool, tmp_path: Path, lab_seed: int, lab_backend: str
) -> None:
    scenario = scenario_named("durability-matrix")
    durability = Durability.parse(triplet, coalescing)
    spec = scenario.spec(lab_seed, backend=lab_backend, durability=durability)
    outcome = run_scenario(spec, scenario, tmp_path / "runs")
    assert outcome.spec.durability == durability
    assert outcome.verdict.held, (
        f"{outcome.summary}\nrun folder: {outcome.folder.path}\n"
        f"reproduce: {reproduce_command(outcome.folder)}"
    )
