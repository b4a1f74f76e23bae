"""kill -9 at random moments of the write path: one durable node under load, killed by a
seeded random moment and restarted, many times. In every run no acknowledged message may
be lost (the checker's verdict), whatever the write was doing when the process died.

The default suite runs two; `--lab-long` runs fifty (`single-node-crash` with seeds 1–50;
its schedule kills the node somewhere in the middle third of the load)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lab.run.runner import RunOutcome

LONG_SEEDS = range(1, 51)


def _no_acknowledged_loss(outcome: RunOutcome) -> None:
    check = outcome.check
    assert check.acknowledged > 0, outcome.summary
    assert check.lost.count == 0, f"{outcome.summary}\nreproduce: {outcome.reproduce}"
    assert outcome.verdict.held, f"{outcome.summary}\nreproduce: {outcome.reproduce}"


@pytest.mark.processes
@pytest.mark.parametrize("seed", [101, 202])
def test_a_killed_durable_node_loses_nothing_acknowledged(
    seed: int, lab_run: Callable[..., RunOutcome]
) -> None:
    _no_acknowledged_loss(lab_run("single-node-crash", seed=seed))


@pytest.mark.processes
@pytest.mark.long
@pytest.mark.parametrize("seed", LONG_SEEDS)
def test_fifty_kills_at_random_moments_lose_nothing_acknowledged(
    seed: int, lab_run: Callable[..., RunOutcome]
) -> None:
    _no_acknowledged_loss(lab_run("single-node-crash", seed=seed))
