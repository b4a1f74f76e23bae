"""`lab bench soak`: a group of three under load with a fault every few seconds loses
nothing and keeps its memory and descriptors bounded (2 minutes here, as in CI; 30 in the
long mode)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.bench.soak import Sample, _course, soak_spec

FIGURE = re.compile(
    r"soak: (?P<minutes>\S+) min, (?P<faults>\d+) faults, (?P<acked>[\d,]+) acknowledged, "
    r"(?P<lost>\d+) lost; nodes' RSS (?P<rss0>\d+) MiB at \d+ s → (?P<rss1>\d+) MiB at \d+ s "
    r"\(peak \d+\), open fds (?P<fd0>\d+) → (?P<fd1>\d+) \(peak \d+\)"
)


def test_the_soak_schedule_spans_the_load_and_is_an_incident() -> None:
    spec = soak_spec(3)
    assert spec.scenario == "incident"
    assert spec.workload.duration_s == 180.0
    starts = [op.at_s for op in spec.schedule if op.action == "start"]
    assert len(starts) >= 30  # a fault every few seconds
    assert max(starts) > 150.0  # to the end of the load, not only its start
    assert soak_spec(3) == spec  # seeded


def _soak(minutes: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> re.Match[str]:
    from lab.bench import soak

    monkeypatch.setattr(soak, "RUNS_DIR", tmp_path / "runs")
    lines: list[str] = []
    figure = soak.run_minutes(lines.append, minutes)
    found = FIGURE.match(figure)
    assert found, figure
    return found


def _bounded(found: re.Match[str]) -> None:
    assert int(found["lost"]) == 0
    assert int(found["acked"].replace(",", "")) > 1000
    assert int(found["rss1"]) <= 2 * int(found["rss0"]) + 64, found.group(0)
    assert int(found["fd1"]) <= int(found["fd0"]) + 30, found.group(0)


@pytest.mark.long  # minutes: a long mode (--lab-long)
@pytest.mark.processes
def test_two_minutes_of_faults_lose_nothing_and_stay_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bounded(_soak(2, tmp_path, monkeypatch))


@pytest.mark.processes
@pytest.mark.long
def test_thirty_minutes_of_faults_lose_nothing_and_stay_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bounded(_soak(30, tmp_path, monkeypatch))


def test_the_course_of_memory_is_read_at_evenly_spaced_moments() -> None:
    samples = [Sample(float(t), 1024 * (100 + t), 60, 3) for t in range(0, 601)]
    course = _course(samples, parts=3)
    assert course == "100 MiB at 0 s, 300 MiB at 200 s, 500 MiB at 400 s, 700 MiB at 600 s"
    assert _course(samples[:2], parts=2) == "100 MiB at 0 s, 100 MiB at 0 s, 101 MiB at 1 s"
