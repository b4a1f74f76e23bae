"""A campaign as a pytest session (lab.campaign.session), a plugin the lab's pytest plugin
loads: `--lab-campaign BUDGET` makes one test per run (`campaign_task`, with the fixture
`lab_campaign`), failures of the failure database first, then fresh seeds, the whole
campaign decided once by the controller and handed to every xdist worker; the session ends
with the campaign's summary table.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from lab.ground.spec_words import parse_seed

if TYPE_CHECKING:
    from lab.campaign.session import CampaignSession
    from lab.campaign.summary import CampaignSummary

__all__: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lab", "chaos lab")
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
    group.addoption("--lab-campaign-guide", default="random", help="random or coverage")
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
    shortest = min(estimate_s(c, session.request.hosts_file) for c in cells)
    setup["cap"] = (int(float(setup["budget_s"]) // shortest) + 1) * max(1, workers)
    return setup


def _campaign_session(config: pytest.Config, setup: dict[str, Any]) -> CampaignSession:
    from lab.campaign.failures import FailureDB
    from lab.campaign.plan import CampaignRequest, Shard
    from lab.campaign.session import CampaignSession
    from lab.pytest_hosts import hosts_file

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


def found_out(config: pytest.Config) -> str:
    found = config.stash.get(_SESSION, None)
    return "" if found is None else str(found[0].out_dir)
