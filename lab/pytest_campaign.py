"""A campaign as a pytest session (lab.campaign.session), a plugin the lab's pytest plugin
loads: `--lab-campaign BUDGET` makes one test per run (`campaign_task`, with the fixture
`lab_campaign`), failures of the failure database first, then fresh seeds, the whole
campaign decided once by the controller and handed to every xdist worker; the session ends
with the campaign's summary table. The test is installed with the lab:
`pytest --pyargs scenarios.test_campaign --lab-campaign 30m …` runs it from any folder.

The session's own choices apply to the campaign: `--lab-target` (the targets, unless
`--lab-campaign-targets` names them), `--backend` and `--lab-mode` likewise; two that
disagree, or an option a campaign cannot honour (`--lab-target-setting`, `--lab-seeds`), are
refused in one line before anything runs.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from lab.ground.spec_words import parse_seed

if TYPE_CHECKING:
    from lab.campaign.session import CampaignSession
    from lab.campaign.summary import CampaignSummary

__all__ = ["campaign_choices", "failure_command", "rerun_line"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lab", "chaos lab")
    group.addoption(
        "--lab-campaign",
        metavar="BUDGET",
        default=None,
        help="run a campaign (e.g. 30m): failures first, then fresh seeds, one test per run",
    )
    group.addoption(
        "--lab-campaign-scenarios",
        default="random",
        metavar="NAMES",
        help="the campaign's scenarios, comma-separated (default random)",
    )
    group.addoption(
        "--lab-campaign-targets",
        default="",
        metavar="NAMES",
        help="the campaign's targets, comma-separated (default: --lab-target's)",
    )
    group.addoption(
        "--lab-campaign-backends",
        default="",
        metavar="NAMES",
        help="the campaign's backends, comma-separated (default: --backend's)",
    )
    group.addoption(
        "--lab-campaign-mode",
        default="",
        metavar="MODES",
        help="the campaign's modes, comma-separated (default: --lab-mode, else each own)",
    )
    group.addoption(
        "--lab-campaign-seed",
        default=None,
        metavar="S",
        help="the campaign's seed (default: random; with a shard of several, the UTC date)",
    )
    group.addoption(
        "--lab-campaign-shard",
        default="1/1",
        metavar="I/N",
        help="this session's slice of the campaign's runs (default 1/1)",
    )
    group.addoption(
        "--lab-campaign-out",
        default=None,
        metavar="DIR",
        help="the campaign folder (default campaigns/<stamp>-<seed>-pytest)",
    )
    group.addoption(
        "--lab-campaign-guide",
        default="random",
        metavar="GUIDE",
        help="random (each draw's seed) or coverage (steered to new behaviour)",
    )
    group.addoption(
        "--lab-failures-dir",
        default=".lab/failures",
        metavar="DIR",
        help="the failure database a campaign replays first and records into",
    )


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
    shortest = min(estimate_s(c, session.request.hosts_file) for c in cells)
    setup["cap"] = (int(float(setup["budget_s"]) // shortest) + 1) * max(1, workers)
    return setup


def _names(text: object) -> tuple[str, ...]:
    return tuple(p.strip() for p in str(text or "").split(",") if p.strip())


def _chosen(config: pytest.Config, campaign: str, session: str, default: str) -> tuple[str, ...]:
    """The campaign's names for `campaign` (an option of its own), else the session's
    `session` option's; both given and different: refused."""
    own = _names(config.getoption(campaign))
    given = config.getoption(session)
    theirs = _names(given)
    if own and given not in (None, default) and set(own) != set(theirs):
        raise pytest.UsageError(
            f"{session} {given} and {campaign} {','.join(own)} disagree: the campaign runs "
            f"on one set; give it once"
        )
    return own or theirs


def campaign_choices(config: pytest.Config) -> dict[str, tuple[str, ...]]:
    """The campaign's targets, backends and modes, the session's own options applied."""
    for option, why in (
        ("--lab-target-setting", "a campaign runs each target with its own settings"),
        ("--lab-seeds", "a campaign draws its own seeds (--lab-campaign-seed)"),
    ):
        if config.getoption(option):
            raise pytest.UsageError(f"{option} is not applied to a campaign: {why}")
    return {
        "targets": _chosen(config, "--lab-campaign-targets", "--lab-target", "broker_ref"),
        "backends": _chosen(config, "--lab-campaign-backends", "--backend", "process"),
        "modes": _chosen(config, "--lab-campaign-mode", "--lab-mode", ""),
    }


def _campaign_session(config: pytest.Config, setup: dict[str, Any]) -> CampaignSession:
    from lab.campaign.failures import FailureDB
    from lab.campaign.plan import CampaignRequest, Shard
    from lab.campaign.session import CampaignSession
    from lab.pytest_hosts import hosts_file

    chosen = campaign_choices(config)
    request = CampaignRequest(
        budget_s=float(setup["budget_s"]),
        seed=int(setup["seed"]),
        scenarios=_names(config.getoption("--lab-campaign-scenarios")),
        targets=chosen["targets"],
        backends=chosen["backends"],
        modes=chosen["modes"],
        shard=Shard.parse(str(config.getoption("--lab-campaign-shard"))),
        hosts_file=hosts_file(config),
        guide=str(config.getoption("--lab-campaign-guide")),
    )
    return CampaignSession(
        request,
        Path(str(setup["out"])),
        FailureDB(Path(str(config.getoption("--lab-failures-dir")))),
        float(setup["deadline"]),
    )


def pytest_configure(config: pytest.Config) -> None:
    from lab.ground.errors import LabError

    try:
        setup = _campaign_setup(config)
        if setup is None:
            return
        config.stash[_SESSION] = (_campaign_session(config, setup), setup)
    except LabError as exc:  # a bad name or value: one line, before anything runs
        raise pytest.UsageError(f"--lab-campaign: {exc}") from None
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_HandOver(setup), "lab-campaign-handover")


class _HandOver:
    def __init__(self, setup: dict[str, Any]) -> None:
        self.setup = setup

    def pytest_configure_node(self, node: object) -> None:
        node.workerinput[_SNAPSHOT] = self.setup  # type: ignore[attr-defined]


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
    for line in summary.table(Path(found_out(config))):
        write(f"  {line}")
    write(f"  campaign folder: {found_out(config)}")


def failure_command(failure: str, failures_dir: Path, env: Mapping[str, str]) -> str:
    """The command that runs a failure the campaign recorded again, where the report is
    read: under GitHub Actions, the night's `failures` artifact fetched and imported first
    (the reusable workflow's name for the merged database); else from this database."""
    from lab.ground.invocation import shown_command

    lab = shown_command("lab")
    run, repository = env.get("GITHUB_RUN_ID", ""), env.get("GITHUB_REPOSITORY", "")
    if env.get("GITHUB_ACTIONS") == "true" and run and repository:
        fetched = f"nightly-failures-{run}"
        return (
            f"gh run download {run} -R {repository} -n failures -D {fetched} && "
            f"{lab} failures import {fetched} && {lab} failures reproduce {failure}"
        )
    default = failures_dir == Path(".lab/failures")
    where = "" if default else f" --failures-dir {shlex.quote(str(failures_dir.absolute()))}"
    return f"{lab} failures reproduce {failure}{where}"


def rerun_line(record: Any, out_dir: Path, failures_dir: Path, env: Mapping[str, str]) -> str:
    """What reproduces a campaign's test (a RunRecord): its failure, from the failure
    database; else its run's own `reproduce` line (the run's backend, target and mode)."""
    if record.failure is not None:
        return failure_command(record.failure, failures_dir, env)
    import json

    try:
        result = json.loads((out_dir / str(record.folder) / "result.json").read_text("utf-8"))
    except (OSError, ValueError):
        return ""
    return str(result.get("reproduce") or "")


def found_out(config: pytest.Config) -> str:
    found = config.stash.get(_SESSION, None)
    return "" if found is None else str(found[0].out_dir)
