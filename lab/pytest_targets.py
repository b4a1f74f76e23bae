"""The pytest plugin's targets (lab.pytest_plugin loads this): `--lab-target` names one or
more, comma-separated, each `NAME` or `NAME@VERSION` (`lab list` shows them), checked when
the session starts (a one-line usage error otherwise). With more than one, every test that
runs the lab (its `lab_target` fixture, which `lab_run` uses) runs once per target, one
after the other (`test_it[master-failure-qpid-broker-j@9.1.0]`, then `…-qpid-broker-j]`):
two versions of a broker side by side in one session, under the same conditions.

    lab_target                    the fixture: the test's target
    targets_of(config)            the session's targets, in the order given
    rerun_command(request, seed)   the pytest command that runs a test again
"""

from __future__ import annotations

import shlex

import pytest

__all__ = ["rerun_command", "targets_of"]


def targets_of(config: pytest.Config) -> tuple[str, ...]:
    raw = str(config.getoption("--lab-target"))
    return tuple(dict.fromkeys(t.strip() for t in raw.split(",") if t.strip())) or ("broker_ref",)


@pytest.fixture
def lab_target(request: pytest.FixtureRequest) -> str:
    """The test's target: the session's, or each in turn."""
    return str(getattr(request, "param", None) or targets_of(request.config)[0])


def pytest_configure(config: pytest.Config) -> None:
    from lab.ground.errors import LabError
    from lab.targets.catalog import make_target

    for ref in targets_of(config):
        try:
            make_target(ref)  # nothing fetched: a version is fetched on its first run
        except LabError as exc:
            raise pytest.UsageError(f"--lab-target {ref}: {exc}") from None


@pytest.hookimpl(trylast=True)  # after the test's own parameters: each one on every target
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    targets = targets_of(metafunc.config)
    if len(targets) > 1 and "lab_target" in metafunc.fixturenames:
        metafunc.parametrize("lab_target", targets, indirect=True, ids=list(targets))


def rerun_command(request: pytest.FixtureRequest, seed: int) -> str:
    """`pytest NODEID --lab-seed N …` with the session's lab options (the test's own target,
    when the session runs several); `pytest` as this session was started
    (lab.ground.invocation), from the session's own folder."""
    from lab.ground.invocation import shown_command

    config = request.config
    target = targets_of(config)[0]
    if "lab_target" in request.fixturenames:
        target = str(request.getfixturevalue("lab_target"))
    mode = config.getoption("--lab-mode")
    command = (
        f"{shown_command('pytest')} {shlex.quote(request.node.nodeid)} "
        f"--lab-seed {seed} --backend {config.getoption('--backend')}"
    )
    command += f" --lab-target {target}" * (target != "broker_ref")
    return command + f" --lab-mode {mode}" * (mode is not None)
