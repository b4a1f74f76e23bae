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
from typing import TYPE_CHECKING, Any

import pytest

from lab.ground.spec import BACKENDS, parse_seed

if TYPE_CHECKING:
    from lab.campaign.session import CampaignSession
    from lab.campaign.summary import CampaignSummary

__all__ = ["DEFAULT_SEED"]

DEFAULT_SEED = 20261121


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lab", "chaos lab")
    group.addoption(
        "--backend", default="process", choices=BACKENDS, help="backend for scenario tests"
    )
    group.addoption("--lab-seed", default=None, help="seed for every scenario test")
    group.addoption(
        "--lab-long", action="store_true", help="also run the long modes (tests marked long)"
    )
    _campaign_options(group)


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


# ---- a campaign as a pytest session (lab.campaign.session) ------------------------------


def _campaign_options(group: pytest.OptionGroup) -> None:
    group.addoption(
        "--lab-campaign",
        metavar="BUDGET",
        default=None,
        help="run a campaign (e.g. 30m): failures first, then fresh seeds, one test per run",
    )
    group.addoption("--lab-campaign-scenarios", default="random", help="comma-separated")
    group.addoption("--lab-campaign-targets", default="broker_ref", help="comma-separated")
    group.addoption("--lab-campaign-backends", default="process", help="comma-separated")
    group.addoption("--lab-campaign-mode", default="", help="comma-separated modes")
    group.addoption("--lab-campaign-seed", default=None, help="default: random (or the date)")
    group.addoption("--lab-campaign-shard", default="1/1", help="I/N")
    group.addoption("--lab-campaign-out", default=None, help="default campaigns/<stamp>-pytest")
    group.addoption("--lab-failures-dir", default=".lab/failures")


_SESSION: pytest.StashKey[tuple[CampaignSession, dict[str, Any]]] = pytest.StashKey()
_SNAPSHOT = "lab_campaign"


def _campaign_setup(config: pytest.Config) -> dict[str, Any] | None:
    """The controller decides the campaign once (seed, deadline, folder, the failures to
    replay) and hands it to every xdist worker, so all collect the same tests."""
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        raw = worker.get(_SNAPSHOT)
        return None if raw is None else dict(raw)
    budget = config.getoption("--lab-campaign")
    if budget is None:
        return None
    import datetime as dt
    import os
    import time

    from lab.campaign.plan import Shard, nightly_seed, parse_budget

    shard = Shard.parse(str(config.getoption("--lab-campaign-shard")))
    raw_seed = config.getoption("--lab-campaign-seed")
    if raw_seed is not None:
        seed = parse_seed(str(raw_seed))
    else:
        seed = nightly_seed() if shard.count > 1 else int.from_bytes(os.urandom(4), "big")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = config.getoption("--lab-campaign-out") or f"campaigns/{stamp}-{seed}-pytest"
    setup: dict[str, Any] = {
        "budget_s": parse_budget(str(budget)),
        "seed": seed,
        "out": str(Path(out).resolve()),
        "deadline": time.time() + parse_budget(str(budget)),
    }
    session = _campaign_session(config, setup)
    setup["failures"] = session.open_failure_ids()
    # Enough tests for every worker to run all budget long; those that no longer fit skip.
    from lab.campaign.campaign import estimate_s

    cells, _ = session.request.cells()
    workers = config.getoption("numprocesses", None) or 1
    if not isinstance(workers, int):
        workers = os.cpu_count() or 1
    shortest = min(estimate_s(c) for c in cells)
    setup["cap"] = (int(float(setup["budget_s"]) // shortest) + 1) * max(1, workers)
    return setup


def _campaign_session(config: pytest.Config, setup: dict[str, Any]) -> CampaignSession:
    from lab.campaign.failures import FailureDB
    from lab.campaign.plan import CampaignRequest, Shard
    from lab.campaign.session import CampaignSession

    def names(option: str) -> tuple[str, ...]:
        return tuple(p.strip() for p in str(config.getoption(option)).split(",") if p.strip())

    request = CampaignRequest(
        budget_s=float(setup["budget_s"]),
        seed=int(setup["seed"]),
        scenarios=names("--lab-campaign-scenarios"),
        targets=names("--lab-campaign-targets"),
        backends=names("--lab-campaign-backends"),
        modes=names("--lab-campaign-mode"),
        shard=Shard.parse(str(config.getoption("--lab-campaign-shard"))),
    )
    return CampaignSession(
        request,
        Path(str(setup["out"])),
        FailureDB(Path(str(config.getoption("--lab-failures-dir")))),
        float(setup["deadline"]),
    )


def pytest_configure(config: pytest.Config) -> None:
    setup = _campaign_setup(config)
    if setup is None:
        return
    config.stash[_SESSION] = (_campaign_session(config, setup), setup)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_HandOver(setup), "lab-campaign-handover")


class _HandOver:
    def __init__(self, setup: dict[str, Any]) -> None:
        self.setup = setup

    def pytest_configure_node(self, node: object) -> None:
        node.workerinput[_SNAPSHOT] = self.setup  # type: ignore[attr-defined]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--lab-long"):
        return
    skip = pytest.mark.skip(reason="a long mode (minutes): run it with --lab-long")
    for item in items:
        if item.get_closest_marker("long") is not None:
            item.add_marker(skip)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "campaign_task" not in metafunc.fixturenames:
        return
    found = metafunc.config.stash.get(_SESSION, None)
    if found is None:
        skip = pytest.mark.skip(reason="campaign runs only with --lab-campaign BUDGET")
        metafunc.parametrize("campaign_task", [pytest.param(None, marks=skip)], ids=["off"])
        return
    session, setup = found
    tasks = session.tasks(int(setup["cap"]), list(setup["failures"]))
    ids = [
        f"{t.number:03d}-replay-{t.failure.id}"
        if t.failure
        else f"{t.number:03d}-{t.cell.scenario}-{t.seed}"
        for t in tasks
    ]
    metafunc.parametrize("campaign_task", tasks, ids=ids)


@pytest.fixture
def lab_campaign(request: pytest.FixtureRequest) -> CampaignSession:
    """The campaign session (lab.campaign.session.CampaignSession) of `--lab-campaign`."""
    found = request.config.stash.get(_SESSION, None)
    if found is None:
        pytest.skip("campaign runs only with --lab-campaign BUDGET")
    return found[0]


def pytest_sessionfinish(session: pytest.Session) -> None:
    found = session.config.stash.get(_SESSION, None)
    if found is None or hasattr(session.config, "workerinput"):
        return
    campaign = found[0]
    if (campaign.out_dir / "records").is_dir():
        session.config.stash[_SUMMARY] = campaign.summary()


_SUMMARY: pytest.StashKey[CampaignSummary] = pytest.StashKey()


def pytest_terminal_summary(terminalreporter: object, config: pytest.Config) -> None:
    summary = config.stash.get(_SUMMARY, None)
    if summary is None:
        return
    write = terminalreporter.write_line  # type: ignore[attr-defined]
    write("lab campaign:")
    for line in summary.table():
        write(f"  {line}")
    write(f"  campaign folder: {found_out(config)}")


def found_out(config: pytest.Config) -> str:
    found = config.stash.get(_SESSION, None)
    return "" if found is None else str(found[0].out_dir)
