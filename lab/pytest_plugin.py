"""The lab's pytest plugin: run scenarios as tests.

Options: `--backend process` (the backend scenario tests use) and `--lab-seed N`
(one seed for every scenario test; default: each scenario's pinned seed).
Fixture `lab_run`: a function `(scenario name) -> RunOutcome` that runs the
scenario into the test's own temporary runs folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lab.spec import BACKENDS, parse_seed

__all__ = ["DEFAULT_SEED"]

DEFAULT_SEED = 20261121


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lab", "chaos lab")
    group.addoption(
        "--backend", default="process", choices=BACKENDS, help="backend for scenario tests"
    )
    group.addoption("--lab-seed", default=None, help="seed for every scenario test")


@pytest.fixture
def lab_seed(request: pytest.FixtureRequest) -> int:
    raw = request.config.getoption("--lab-seed")
    return DEFAULT_SEED if raw is None else parse_seed(str(raw))


@pytest.fixture
def lab_backend(request: pytest.FixtureRequest) -> str:
    return str(request.config.getoption("--backend"))


@pytest.fixture
def lab_run(tmp_path: Path, lab_seed: int, lab_backend: str) -> Callable[[str], object]:
    from lab.runner import run_scenario
    from scenarios.catalog import scenario_named

    def run(name: str) -> object:
        scenario = scenario_named(name)
        spec = scenario.spec(lab_seed, backend=lab_backend)
        return run_scenario(spec, scenario, tmp_path / "runs")

    return run
