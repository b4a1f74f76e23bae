"""The lab's pytest plugin: run scenarios as tests.

Options: `--backend` (process, docker, ssh with `--lab-hosts`), `--lab-target NAME[@VERSION]`
(comma-separated: each test on each, lab.pytest_targets; its own settings with
`--lab-target-setting KEY=VALUE`, repeatable) and `--lab-mode`
(default: each scenario's own HA design) choose what scenario tests run on; a scenario the
target, backend or mode cannot run is skipped with the CLI's one-line reason. `--lab-seed N`:
one seed for every scenario test (default: each one's pinned seed). `--lab-seeds 5` runs
every test that runs a scenario once per seed, five seeds from `--lab-seed` on (or the
pinned one); `--lab-seeds 7,8,9` names them (lab.targets.suite.seeds_option). `--lab-runs-dir DIR`
keeps the run folders there with `suite.jsonl` (lab.targets.suite), which `lab tables suite`
reads (lab.reporting.suite_table).
Fixture `lab_run`: `(scenario name | incident Path | Scenario) -> RunOutcome`, run into the
test's own runs folder (lab.library).
Fixture `lab_deviation`: `(outcome) -> None`; a deviation the target declares
(lab.judge.deviations) and the run reproduced ends the test as an expected failure (xfail;
Allure category "deviation reproduced"); a held run whose deviation is declared warns
("declared deviation not seen: fixed upstream?", listed at the session's end; a failure
with `--lab-strict-deviations`), unless the declaration's `seen` rates say earlier sessions
held too (then it is listed, quietly, as "not seen, as in earlier sessions"). Fixture
`lab_report`: `(run folder, test_command=None) -> None`; with allure-pytest active
(`--alluredir`) it attaches the run to the running test (steps, chart, checker result, logs,
the commands that reproduce the test and the run: lab/reporting/allure_attach.py);
`lab_run` calls it after every run.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest

from lab.ground.cluster_settings import MODES
from lab.ground.errors import LabError
from lab.ground.spec import BACKENDS
from lab.ground.spec_words import parse_seed

__all__ = ["DEFAULT_SEED"]

# --lab-hosts FILE|rig; a campaign as a pytest session; --lab-target NAME[@VERSION],…
pytest_plugins = ("lab.pytest_hosts", "lab.pytest_campaign", "lab.pytest_targets")

DEFAULT_SEED = 20261121


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lab", "chaos lab")
    group.addoption(
        "--backend", default="process", choices=BACKENDS, help="backend for scenario tests"
    )
    group.addoption("--lab-seed", default=None, help="seed for every scenario test")
    many = "run each scenario test once per seed: N seeds from --lab-seed on, or these"
    group.addoption("--lab-seeds", default=None, metavar="N|S1,S2,...", help=many)
    group.addoption(
        "--lab-long", action="store_true", help="also run the long modes (tests marked long)"
    )
    targets = "the target, NAME or NAME@VERSION; comma-separated: each test on each"
    group.addoption("--lab-target", default="broker_ref", help=targets)
    group.addoption("--lab-mode", default=None, choices=MODES, help="HA design (default: own)")
    setting = "a setting of the target's own, for every run (repeatable)"
    group.addoption("--lab-target-setting", action="append", metavar="KEY=VALUE", help=setting)
    group.addoption("--lab-runs-dir", default=None, help="keep run folders (and suite.jsonl)")
    strict = "fail a test whose target declares a deviation the run did not show"
    group.addoption("--lab-strict-deviations", action="store_true", help=strict)


@pytest.fixture
def lab_seed(request: pytest.FixtureRequest) -> int:
    if hasattr(request, "param"):  # one of --lab-seeds
        return int(request.param)
    raw = request.config.getoption("--lab-seed")
    return DEFAULT_SEED if raw is None else parse_seed(str(raw))


def _seeds(config: pytest.Config) -> tuple[int, ...] | None:
    from lab.targets.suite import seeds_option

    return seeds_option(
        config.getoption("--lab-seeds"), config.getoption("--lab-seed"), DEFAULT_SEED
    )


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

    # A campaign's test is not run again by its id (a campaign's draws): it names its own.
    default = None if "campaign_task" in request.fixturenames else rerun_command(request, lab_seed)

    def report(folder: Path, test_command: str | None = None) -> None:
        if listener is None or results_dir is None:
            return
        from lab.reporting.allure_attach import attach_to_running_test

        try:
            attach_to_running_test(
                listener,
                folder,
                results_dir=Path(results_dir),
                test_command=test_command or default,
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
    from lab.ground.spec_words import parse_target_settings
    from lab.library import index_target, label_of, plan_run
    from lab.pytest_targets import rerun_command
    from lab.run.runner import run_scenario
    from lab.targets.suite import RUN_PROPERTY, SUITE_INDEX, append_index, run_property

    kept = request.config.getoption("--lab-runs-dir")
    own = re.sub(r"[^\w.-]", "_", request.node.name)[:120]
    runs_dir = tmp_path / "runs" if kept is None else Path(kept) / own

    def index(**entry: object) -> None:  # a line of suite.jsonl, with --lab-runs-dir
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
        incident = isinstance(what, Path)
        seed = seed if incident else (lab_seed if seed is None else seed)
        wanted: dict[str, object] = dict(
            scenario=label_of(what), **index_target(node), backend=chosen, seed=seed
        )
        wanted["mode"] = mode or lab_mode or ""
        try:
            from lab.pytest_hosts import hosts_file

            given = parse_target_settings(request.config.getoption("--lab-target-setting"))
            planned = plan_run(
                what,
                seed=seed,
                backend=chosen,
                target=node,
                mode=mode if incident else (mode or lab_mode),
                durability=durability,
                work_dir=tmp_path / "probe",
                hosts_file=hosts_file(request.config) if chosen == "ssh" else None,
                settings=given,
            )
        except (UsageError, SetupError) as exc:
            index(**wanted, refused=str(exc))
            if isinstance(exc, SetupError):  # something to install was missing
                skip_unless_ci(str(exc))
            pytest.skip(str(exc))
        spec = planned.spec
        wanted.update(scenario=spec.scenario, mode=spec.group.mode, seed=spec.seed)
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
        request.node.user_properties.append((RUN_PROPERTY, run_property(outcome.folder.path)))
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
        found = outcome.judgement.deviation(
            spec.scenario, spec.backend, spec.group.mode, spec.group.target_context.get(spec.target)
        )
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
        if not found.loud:  # held before too: the declaration's `seen` rate says so
            return ""
        if strict:
            pytest.fail(line)
        warnings.warn(DeviationNotSeen(line), stacklevel=2)
        return ""

    return judge


def pytest_configure(config: pytest.Config) -> None:
    try:
        _seeds(config)  # a bad --lab-seeds is refused before anything runs
    except LabError as exc:
        raise pytest.UsageError(f"--lab-seeds: {exc}") from None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--lab-long"):
        return
    skip = pytest.mark.skip(reason="a long mode (minutes): run it with --lab-long")
    for item in items:
        if item.get_closest_marker("long") is not None:
            item.add_marker(skip)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    seeds = _seeds(metafunc.config)
    if seeds is not None and "lab_seed" in metafunc.fixturenames:
        metafunc.parametrize("lab_seed", seeds, indirect=True, ids=[f"seed{s}" for s in seeds])


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    from lab.targets.suite import write_deviations

    write_deviations(terminalreporter)
    _write_rates(terminalreporter)


def _write_rates(terminalreporter: Any) -> None:
    """With --lab-seeds: each scenario's rates over the session's runs, and what changed
    against its declared deviations' rates (lab.reporting.suite_rates)."""
    import json

    from lab.reporting.suite_declared import declared_deviations
    from lab.reporting.suite_rates import RunRecord, summary
    from lab.targets.suite import RUN_PROPERTY

    records = []
    for report in (r for rs in terminalreporter.stats.values() for r in rs):
        for key, value in getattr(report, "user_properties", ()):
            if key != RUN_PROPERTY or getattr(report, "when", "call") != "call":
                continue
            run = json.loads(value)
            verdict = (
                run["verdict"] if run["verdict"] in ("held", "deviation", "broken") else "unknown"
            )
            records.append(
                RunRecord(
                    str(run["scenario"]), str(run["target"]), str(run["backend"]), run["seed"],
                    verdict, run["deviation"], run["gap_s"], str(run["mode"] or ""),
                    tuple(sorted((run.get("settings") or {}).items())),
                )
            )  # fmt: skip
    lines = summary(records, declared_deviations)
    if lines:
        terminalreporter.write_sep("-", "lab: rates over seeds")
    for line in lines:
        terminalreporter.write_line(line, bold=line.startswith("  changed"))


def skip_unless_ci(reason: str) -> NoReturn:
    """Skip the running test because a tool or engine it needs is missing — except under
    `CI=true`, where the suite installs Docker, Chromium, Java and Broker-J itself, so one
    that is missing is a failed install and fails the test, saying what was missing."""
    import os

    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true, and the suite installs what this needs: {reason}", pytrace=False)
    pytest.skip(reason)
