"""The lab's pytest plugin: run scenarios as tests.

Options: `--backend process`, `--lab-target NAME[@VERSION]` (comma-separated: each test on
each, lab.pytest_targets) and `--lab-mode`
(default: each scenario's own HA design) choose what scenario tests run on; a scenario the
target, backend or mode cannot run is skipped with the CLI's one-line reason. `--lab-seed N`:
one seed for every scenario test (default: each one's pinned seed). `--lab-runs-dir DIR`
keeps the run folders there with `suite.jsonl` (lab.targets.suite), which `lab tables suite`
reads (lab.reporting.suite_table).
Fixture `lab_run`: `(scenario name | incident Path | Scenario) -> RunOutcome`, run into the
test's own runs folder (lab.library).
Fixture `lab_deviation`: `(outcome) -> None`; a deviation the target declares
(lab.judge.deviations) and the run reproduced ends the test as an expected failure (xfail;
Allure category "deviation reproduced"); a held run whose deviation is declared warns
("declared deviation not seen: fixed upstream?", listed at the session's end; a failure
with `--lab-strict-deviations`). Fixture `lab_report`: `(run folder) -> None`; with
allure-pytest active (`--alluredir`) it attaches the run to the running test (steps, chart,
checker result, logs: lab/reporting/allure_attach.py); `lab_run` calls it after every run.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from lab.ground.cluster_settings import MODES
from lab.ground.spec import BACKENDS, parse_seed

if TYPE_CHECKING:
    from lab.campaign.session import CampaignSession
    from lab.campaign.summary import CampaignSummary

__all__ = ["DEFAULT_SEED"]

pytest_plugins = ("lab.pytest_targets",)  # --lab-target NAME[@VERSION],…; fixture lab_target

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
    targets = "the target, NAME or NAME@VERSION; comma-separated: each test on each"
    group.addoption("--lab-target", default="broker_ref", help=targets)
    group.addoption("--lab-mode", default=None, choices=MODES, help="HA design (default: own)")
    group.addoption("--lab-runs-dir", default=None, help="keep run folders (and suite.jsonl)")
    strict = "fail a test whose target declares a deviation the run did not show"
    group.addoption("--lab-strict-deviations", action="store_true", help=strict)
    _campaign_options(group)


@pytest.fixture
def lab_seed(request: pytest.FixtureRequest) -> int:
    raw = request.config.getoption("--lab-seed")
    return DEFAULT_SEED if raw is None else parse_seed(str(raw))


@pytest.fixture
def lab_backend(request: pytest.FixtureRequest) -> str:
    return str(request.config.getoption("--backend"))


@pytest.fixture
def lab_mode(request: pytest.FixtureRequest) -> str | None:
    return request.config.getoption("--lab-mode")


@pytest.fixture
def lab_report(request: pytest.FixtureRequest, lab_seed: int) -> Callable[[Path], None]:
    listener = request.config.pluginmanager.get_plugin("allure_listener")
    results_dir = getattr(request.config.option, "allure_report_dir", None)
    from lab.pytest_targets import rerun_command  # (a plugin of its own: imported by pytest)

    test_command = rerun_command(request, lab_seed)

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
    request: pytest.FixtureRequest,
    tmp_path: Path,
    lab_seed: int,
    lab_backend: str,
    lab_target: str,
    lab_mode: str | None,
    lab_report: Callable[[Path], None],
) -> Callable[..., object]:
    """`lab_run(what, backend=None, target=None, seed=None, durability=None, mode=None)`:
    run `what` — a scenario's name, an incident file's `Path`, or a `Scenario` object
    (lab.library) — into the test's own runs folder and return its RunOutcome; a run that
    cannot be made there is skipped with the one-line reason the CLI gives."""
    from lab.ground.errors import SetupError, UsageError
    from lab.ground.spec import Durability
    from lab.library import index_target, label_of, plan_run
    from lab.pytest_targets import rerun_command
    from lab.run.runner import run_scenario
    from lab.targets.suite import SUITE_INDEX, append_index

    kept = request.config.getoption("--lab-runs-dir")
    own = re.sub(r"[^\w.-]", "_", request.node.name)[:120]
    runs_dir = tmp_path / "runs" if kept is None else Path(kept) / own

    def index(**entry: str) -> None:  # a line of suite.jsonl, with --lab-runs-dir
        if kept is not None:
            append_index(Path(kept) / SUITE_INDEX, {"test": request.node.nodeid, **entry})

    def run(
        what: Any,
        backend: str | None = None,
        target: str | None = None,
        seed: int | None = None,
        durability: Durability | None = None,
        mode: str | None = None,
    ) -> object:
        chosen, node = backend or lab_backend, target or lab_target
        wanted = dict(scenario=label_of(what), **index_target(node), backend=chosen)
        wanted["mode"], incident = mode or "", isinstance(what, Path)
        try:
            planned = plan_run(
                what,
                seed=seed if incident else (lab_seed if seed is None else seed),
                backend=chosen,
                target=node,
                mode=mode if incident else (mode or lab_mode),
                durability=durability,
                work_dir=tmp_path / "probe",
            )
        except (UsageError, SetupError) as exc:
            index(**wanted, refused=str(exc))
            if isinstance(exc, SetupError):  # something to install was missing
                skip_unless_ci(str(exc))
            pytest.skip(str(exc))
        spec = planned.spec
        wanted.update(scenario=spec.scenario, mode=spec.group.mode)
        # A Scenario of the test file is run again by its test, not by `lab run`.
        again = None if planned.registered else rerun_command(request, spec.seed)
        try:
            outcome = run_scenario(spec, planned.parts, runs_dir, reproduce=again)
        except Exception:
            latest = runs_dir / spec.scenario / "latest"
            if (latest / "spec.json").is_file():
                lab_report(latest)
                index(**wanted, folder=str(latest.resolve()))
            raise
        lab_report(outcome.folder.path)
        index(**wanted, folder=str(outcome.folder.path))
        return outcome

    return run


@pytest.fixture
def lab_deviation(request: pytest.FixtureRequest) -> Callable[[Any], str]:
    """`lab_deviation(outcome)`: a run that shows a deviation its target declares ends the test
    as an expected failure; a held run whose target declares one warns (or fails, with
    `--lab-strict-deviations`); any other run is left to the test's own assertions, and the
    line returned says why it is not the declared deviation ("" when none is declared)."""
    from lab.judge.deviations import DeviationNotSeen
    from lab.targets.suite import DEVIATION_PROPERTY

    strict = bool(request.config.getoption("--lab-strict-deviations"))

    def judge(outcome: Any) -> str:
        spec = outcome.spec
        found = outcome.judgement.deviation(spec.scenario, spec.backend, spec.group.mode)
        if found is None or found.status == "unmatched":
            return "" if found is None else found.line()
        request.node.user_properties.append((DEVIATION_PROPERTY, line := found.line()))
        if request.config.pluginmanager.get_plugin("allure_listener") is not None:
            from lab.reporting.allure_categories import label_deviation

            label_deviation(found)
        if found.matched is not None:  # the violation kinds, not as `violations: ` (a category)
            pytest.xfail(
                f"{line}: {found.matched.observed} ({'/'.join(outcome.verdict.violations)})"
            )
        if strict:
            pytest.fail(line)
        warnings.warn(DeviationNotSeen(line), stacklevel=2)
        return ""

    return judge


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
    from lab.targets.suite import write_deviations

    write_deviations(terminalreporter)
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


def skip_unless_ci(reason: str) -> NoReturn:
    """Skip the running test because a tool or engine it needs is missing — except under
    `CI=true`, where the suite installs Docker, Chromium, Java and Broker-J itself, so one
    that is missing is a failed install and fails the test, saying what was missing."""
    import os

    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true, and the suite installs what this needs: {reason}", pytrace=False)
    pytest.skip(reason)
