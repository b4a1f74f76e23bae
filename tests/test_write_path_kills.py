"""kill -9 at random moments of the write path: one durable node under load, killed by a
seeded random moment and restarted, many times. In every run no acknowledged message may
be lost (the checker's verdict), whatever the write was doing when the process died, and
the run's failover time is the wait for the restarted node's first acknowledgement.

The default suite runs two; `--lab-long` runs fifty (`single-node-crash` with seeds 1–50;
its schedule kills the node somewhere in the middle third of the load)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from lab.run.runner import RunOutcome

LONG_SEEDS = range(1, 51)


def _no_acknowledged_loss(outcome: RunOutcome) -> None:
    check = outcome.check
    assert check.acknowledged > 0, outcome.summary
    assert check.lost.count == 0, f"{outcome.summary}\nreproduce: {outcome.reproduce}"
    assert outcome.verdict.held, f"{outcome.summary}\nreproduce: {outcome.reproduce}"


def _failed_over_to_the_restarted_node(outcome: RunOutcome) -> None:
    """The run's failover time is the kill's start to the first send acknowledged once the
    node was restarted, read here from the run's own files."""
    events = outcome.events
    kill = next(e for e in events if e["kind"] == "fault.start" and e["id"] == "f1")
    restart = next(e for e in events if e["kind"] == "node.start" and e["time"] > kill["time"])
    operations = [json.loads(line) for line in outcome.folder.history.read_text().splitlines()]
    first = min(
        op["time"]
        for op in operations
        if op["type"] == "ok" and op["f"] == "send" and op["time"] >= restart["time"]
    )
    expected = round(first / 1e9 - kill["time"] / 1e9, 3)
    assert outcome.metrics.failover_s == (expected,), outcome.folder.path


@pytest.mark.processes
@pytest.mark.parametrize("seed", [101, 202])
def test_a_killed_durable_node_loses_nothing_acknowledged(
    seed: int, lab_run: Callable[..., RunOutcome]
) -> None:
    outcome = lab_run("single-node-crash", seed=seed)
    _no_acknowledged_loss(outcome)
    _failed_over_to_the_restarted_node(outcome)


@pytest.mark.processes
@pytest.mark.long
@pytest.mark.parametrize("seed", LONG_SEEDS)
def test_fifty_kills_at_random_moments_lose_nothing_acknowledged(
    seed: int, lab_run: Callable[..., RunOutcome]
) -> None:
    _no_acknowledged_loss(lab_run("single-node-crash", seed=seed))
