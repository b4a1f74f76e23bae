"""Hand-written trials for the detection benchmark's unit tests: no campaign runs."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from lab.bench.detection_results import CellResult

BEGAN = dt.datetime(2026, 11, 26, 8, 0, 0, tzinfo=dt.UTC)


def trial(
    bug: str | None,
    generator: str,
    number: int,
    minutes: float | None,
    **more: object,
) -> CellResult:
    """A trial of `bug` by `generator`: found at `minutes` (None: missed), campaign seed
    10 + number, 4 runs when found and 9 when not; `more` sets any other field."""
    cell = CellResult(
        bug,
        "replicated-group",
        generator,
        number,
        10 + number,
        minutes is not None,
        4 if minutes else 9,
        minutes,
        ("lost",) if minutes else (),
    )
    return replace(cell, **more)  # type: ignore[arg-type]


def cell_trials(
    bug: str, generator: str, minutes: list[float | None], **more: object
) -> list[CellResult]:
    """Trials 1, 2, … of one cell, found at each of `minutes` (None: missed)."""
    return [trial(bug, generator, n, m, **more) for n, m in enumerate(minutes, start=1)]
