"""The lab's pytest plugin: run scenarios as tests.

Options: `--backend process` (the backend scenario tests use) and `--lab-seed N`
(one seed for every scenario test; default: each scenario's pinned seed).
Fixture `lab_run`: a function `(scenario name) -> RunOutcome` that runs the
scenario into the test's own temporary runs folder. Fixture `lab_report`: a function
`(run folder) -> None` that, when allure-pytest is active (`--alluredir`), attaches the
run to the running test (steps, chart, checker result, logs: lab/allure_attach.py);
`lab_run` calls it after every run. Without `--alluredir` it does nothing.
"""

from __future__ import annotations

import shlex
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from lab.ground.spec import BACKENDS, parse_seed

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
def lab_report(
    request: pytest.FixtureRequest, lab_seed: int, lab_backend: str
) -> Callable[[Path], None]:
    listener = request.config.pluginmanager.get_plugin("allure_listener")
    results_dir = getattr(request.config.option, "allure_report_dir", None)
    test_command = (
        f".venv/bin/pytest {shlex.quote(request.node.nodeid)} "
        f"--lab-seed {lab_seed} --backend {lab_backend}"
    )

    def report(folder: Path) -> None:
        if listener is None or results_dir is None:
            return
        from lab.reporting.allure_attach import attach_to_running_test

        try:
            attach_to_running_test(
                listener, folder, results_dir=Path(results_dir), test_command=test_command
            )
        except Exception as exc:  # a report that cannot be made must not fail the test
            warnings.warn(f"lab: could not attach {folder} to Allure: {exc!r}", stacklevel=2)

    return report


@pytest.fixture
def lab_run(
    tmp_path: Path, lab_seed: int, lab_backend: str, lab_report: Callable[[Path], None]
) -> Callable[..., object]:
    """`lab_run(name, backend=None, target="broker_ref", seed=None, durability=None,
    mode=None)`:
    run the scenario into the test's own runs folder and return its RunOutcome; a scenario
    that cannot run on the backend is skipped with the reason the CLI gives."""
    from lab.compose import parts_for
    from lab.ground.errors import UsageError
    from lab.ground.spec import Durability
    from lab.run.runner import run_scenario

    def run(
        name: str,
        backend: str | None = None,
        target: str = "broker_ref",
        seed: int | None = None,
        durability: Durability | None = None,
        mode: str | None = None,
    ) -> object:
        chosen = backend or lab_backend
        try:
            parts = parts_for(name, chosen, target, mode)
        except UsageError as exc:
            pytest.skip(str(exc))
        spec = parts.scenario.spec(
            lab_seed if seed is None else seed,
            backend=chosen,
            target=parts.target,
            durability=durability,
        )
        runs_dir = tmp_path / "runs"
        try:
            outcome = run_scenario(spec, parts, runs_dir)
        except Exception:
            latest = runs_dir / name / "latest"
            if (latest / "spec.json").is_file():
                lab_report(latest)
            raise
        lab_report(outcome.folder.path)
        return outcome

    return run
