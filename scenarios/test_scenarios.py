"""Each scenario as a test: run it and assert the documents' prediction.

Every scenario runs on local processes (the default backend, `--backend` changes it)
and again in containers; the container runs are marked `docker` and skip with the
reason on a machine with no Docker engine that the lab may not install. In containers the
default suite runs the scenarios whose faults the containers make their own way
(IN_CONTAINERS: packet-filter cuts, a full disk of its own, a frozen container, one of
each HA design); the others there are a long mode (`--lab-long`), as the whole matrix in
containers is more than the default suite's time on two cores. `--lab-target
qpid-broker-j` runs them against Broker-J: those it cannot run skip with the CLI's reason,
and a deviation it declares (lab/targets/brokerj/deviations.toml) that a run reproduces is
an expected failure (xfail), not a failure.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lab.pytest_plugin import skip_unless_ci
from lab.run.runner import RunOutcome
from scenarios.catalog import RUNNABLE


def _assert_held(outcome: RunOutcome, note: str = "") -> None:
    """A failure names its violation kinds on a line `violations: lost, two-masters`: the
    Allure report's categories (lab.reporting.allure_categories) sort failures by them."""
    assert outcome.check.acknowledged > 0, (
        "the workload acknowledged nothing\nviolations: nothing-acknowledged"
    )
    assert outcome.folder.result.is_file()
    assert outcome.verdict.held, (
        f"{outcome.summary}\nviolations: {', '.join(outcome.verdict.violations)}"
        f"\nrun folder: {outcome.folder.path}\nreproduce: {outcome.reproduce}"
        + (f"\n{note}" if note else "")
    )


@pytest.mark.processes
@pytest.mark.parametrize("name", sorted(RUNNABLE))
def test_scenario_holds_its_prediction(
    name: str, lab_run: Callable[..., RunOutcome], lab_deviation: Callable[[RunOutcome], str]
) -> None:
    outcome = lab_run(name)
    _assert_held(outcome, lab_deviation(outcome))


def _docker_or_skip() -> None:
    from lab.backends.docker.engine import can_install, engine_answers

    if not engine_answers() and not can_install():
        skip_unless_ci(
            "no Docker engine answers, and the lab installs one itself only as root on "
            "Debian: install Docker to run the scenarios in containers"
        )


# The container runs of the default suite; the rest of the matrix runs with --lab-long.
IN_CONTAINERS = frozenset(
    {
        "master-failure",
        "partition-and-recovery",
        "disk-full",
        "primary-failure",
        "random",
    }
)


@pytest.mark.docker
@pytest.mark.parametrize(
    "name",
    [
        n if n in IN_CONTAINERS else pytest.param(n, marks=pytest.mark.long)
        for n in sorted(RUNNABLE)
    ],
)
def test_scenario_holds_its_prediction_in_containers(
    name: str, lab_run: Callable[..., RunOutcome], lab_deviation: Callable[[RunOutcome], str]
) -> None:
    _docker_or_skip()
    outcome = lab_run(name, backend="docker")
    _assert_held(outcome, lab_deviation(outcome))
