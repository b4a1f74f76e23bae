"""`lab campaign --stop-at-first-broken`: the campaign's loop ends at its first broken run,
with runs faked (the real ones are in test_campaign_processes.py and the detection
benchmark's tests); unknown runs do not stop it; runs still going are interrupted."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.campaign import campaign as campaign_module
from lab.campaign.campaign import run_campaign
from lab.campaign.failures import FailureDB
from lab.campaign.plan import CampaignRequest
from lab.campaign.summary import CampaignSummary
from lab.campaign.tasks import RunRecord, Task


class _Proc:
    def poll(self) -> int | None:
        return None


class _FakeRun:
    """A run that ends at its second poll with the verdict `verdicts` gives its number."""

    verdicts: dict[int, str] = {}
    seconds: dict[int, float] = {}  # a long run: nothing more fits in the budget after it
    interrupted: list[int] = []

    def __init__(self, task: Task, out_dir: Path) -> None:
        self.task = task
        self.proc = _Proc()
        self.polls = 0

    def poll(self) -> RunRecord | None:
        self.polls += 1
        number = self.task.number
        if self.polls < 2 and number not in self.interrupted:
            return None
        # An interrupted run ends with no verdict of its own, as `lab run` does on SIGINT.
        verdict = "unknown" if number in self.interrupted else self.verdicts.get(number, "held")
        cell = self.task.cell
        return RunRecord(
            number=number,
            kind="fresh",
            scenario=cell.scenario,
            target=cell.target,
            backend=cell.backend,
            mode=cell.mode,
            seed=self.task.seed,
            verdict=verdict,
            violations=("lost",) if verdict == "broken" else (),
            seconds=self.seconds.get(number, 1.0),
            folder=None,
        )

    def interrupt(self) -> None:
        self.interrupted.append(self.task.number)

    def kill(self) -> None:
        return None


@pytest.fixture
def fake_runs(monkeypatch: pytest.MonkeyPatch) -> type[_FakeRun]:
    monkeypatch.setattr(campaign_module, "RunningTask", _FakeRun)
    monkeypatch.setattr(campaign_module, "warm_up", lambda: None)
    monkeypatch.setattr(campaign_module, "wait_any", lambda procs, timeout: None)
    _FakeRun.interrupted = []
    _FakeRun.seconds = {}
    return _FakeRun


def _campaign(tmp_path: Path, jobs: int, stop: bool) -> CampaignSummary:
    request = CampaignRequest(budget_s=3600, seed=7, jobs=jobs, stop_at_broken=stop)
    shown: list[str] = []
    return run_campaign(
        request,
        tmp_path / "c",
        FailureDB(tmp_path / "db"),
        lambda s, line: shown.append(line or ""),
    )


def test_the_campaign_ends_at_its_first_broken_run(
    tmp_path: Path, fake_runs: type[_FakeRun]
) -> None:
    fake_runs.verdicts = {2: "unknown", 4: "broken", 6: "broken"}
    summary = _campaign(tmp_path, jobs=1, stop=True)
    assert [(r.number, r.verdict) for r in summary.records] == [
        (1, "held"),
        (2, "unknown"),  # an unknown run does not stop it
        (3, "held"),
        (4, "broken"),
    ]
    assert summary.to_json()["request"]["stop_at_broken"] is True


def test_runs_still_going_are_interrupted_and_nothing_more_starts(
    tmp_path: Path, fake_runs: type[_FakeRun]
) -> None:
    fake_runs.verdicts = {1: "broken"}
    summary = _campaign(tmp_path, jobs=2, stop=True)
    assert fake_runs.interrupted == [2]
    assert [(r.number, r.verdict) for r in summary.records] == [(1, "broken"), (2, "unknown")]


def test_without_the_flag_a_broken_run_does_not_end_it(
    tmp_path: Path, fake_runs: type[_FakeRun]
) -> None:
    fake_runs.verdicts = {1: "broken"}
    fake_runs.seconds = {5: 1e9}
    summary = _campaign(tmp_path, jobs=1, stop=False)
    assert len(summary.records) == 5
