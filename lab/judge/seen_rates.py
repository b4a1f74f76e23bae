"""How often a declared deviation was seen: the `seen` list of a declaration in a target's
deviations file (lab.judge.deviations), one entry per suite session that counted it.

    seen = [
        { backend = "process", rate = "5/5", date = 2026-11-26, note = "seeds 1-5, load 40" },
        { backend = "docker", rate = "3/5", date = 2026-11-26 },
    ]

`rate` is `K/N`: the deviation was reproduced in K of the N runs of its scenario on that
backend (one run per seed); `date` is the day the runs were made (a TOML date, or the same
as a string); `note` says anything else worth keeping (the seeds, the machine's load). The
latest entry of a backend is the rate the verdict tables (lab.reporting.suite_rates)
compare a new session with.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lab.ground.spec import BACKENDS

__all__ = ["SeenRate", "latest_seen", "parse_seen"]

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
_KEYS = {"backend", "rate", "date", "note"}


@dataclass(frozen=True)
class SeenRate:
    """A deviation reproduced in `times` of `runs` runs on `backend`, on `date`."""

    backend: str
    times: int
    runs: int
    date: dt.date
    note: str = ""

    def __str__(self) -> str:
        return f"{self.times}/{self.runs} ({self.date.isoformat()})"


def _date(raw: Any, where: str) -> dt.date:
    if isinstance(raw, dt.datetime):
        return raw.date()
    if isinstance(raw, dt.date):
        return raw
    if isinstance(raw, str):
        try:
            return dt.date.fromisoformat(raw.strip())
        except ValueError:
            pass
    raise ValueError(f"{where}.date: {raw!r} is not a date (e.g. 2026-11-26)")


def _entry(raw: Any, where: str) -> SeenRate:
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be a table: {{ backend, rate, date }}")
    extra = sorted(set(raw) - _KEYS)
    if extra:
        raise ValueError(f"{where}: unknown key {extra[0]!r} (known: {', '.join(sorted(_KEYS))})")
    missing = [k for k in ("backend", "rate", "date") if k not in raw]
    if missing:
        raise ValueError(f"{where}: {missing[0]!r} is required")
    backend = raw["backend"]
    if backend not in BACKENDS:
        raise ValueError(f"{where}.backend: {backend!r} (known: {', '.join(BACKENDS)})")
    found = _RATE.match(str(raw["rate"])) if isinstance(raw["rate"], str) else None
    if found is None:
        raise ValueError(f'{where}.rate: {raw["rate"]!r} is not K/N (e.g. "3/5")')
    times, runs = int(found[1]), int(found[2])
    if runs < 1 or times > runs:
        raise ValueError(f"{where}.rate: {times}/{runs} cannot be (K ≤ N, N ≥ 1)")
    note = raw.get("note", "")
    if not isinstance(note, str):
        raise ValueError(f"{where}.note must be a string")
    return SeenRate(backend, times, runs, _date(raw["date"], where), " ".join(note.split()))


def parse_seen(raw: Any, where: str) -> tuple[SeenRate, ...]:
    """The `seen` list of one declaration (ValueError naming the entry and the key)."""
    if not isinstance(raw, list):
        raise ValueError(f"{where}.seen must be a list of {{ backend, rate, date }} tables")
    return tuple(_entry(e, f"{where}.seen[{i}]") for i, e in enumerate(raw))


def latest_seen(seen: Iterable[SeenRate], backend: str) -> SeenRate | None:
    """The newest entry for `backend` (the later one of a day); None when there is none."""
    mine = [(s.date, i, s) for i, s in enumerate(seen) if s.backend == backend]
    return max(mine)[2] if mine else None
