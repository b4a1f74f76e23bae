"""J11 under a handful of the seeds' durability triplets: the prediction follows the ack policy."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lab.ground.spec import Durability
from lab.run.runner import RunOutcome

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
    triplet: str, coalescing: bool, lab_run: Callable[..., RunOutcome]
) -> None:
    durability = Durability.parse(triplet, coalescing)
    outcome = lab_run("durability-matrix", durability=durability)
    assert outcome.spec.durability == durability
    assert outcome.verdict.held, (
        f"{outcome.summary}\nrun folder: {outcome.folder.path}\nreproduce: {outcome.reproduce}"
    )
