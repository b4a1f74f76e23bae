"""Where, when and on what each scenario-suite session ran: the sessions table of the
verdict pages (lab.reporting.suite_table).

    sessions(folders, target) → [Session]
        runs and refusals counted from each folder's index (or its result.json files), all of
        them or those of one target (`NAME[@VERSION]`), the first and last run's start (the
        run folders' names), the machine and its load (machine.json: as the session began;
        the index's lines: as each run ended)
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.ground.machine import Machine
from lab.targets.suite import SUITE_INDEX, SUITE_MACHINE, read_index

__all__ = ["Session", "sessions"]

_STAMP = re.compile(r"^(\d{8}T\d{6}Z)-")


@dataclass(frozen=True)
class Session:
    """One folder of runs: how many, their first and last start (UTC, from the run folders'
    names), the machine it recorded and its load average as the session began (None: not
    recorded)."""

    folder: Path
    runs: int
    refused: int
    first: dt.datetime | None
    last: dt.datetime | None
    machine: Machine | None
    load: float | None = None
    loads: tuple[float, ...] = ()  # as each run ended (the index's lines)

    @property
    def when(self) -> str:
        if self.first is None or self.last is None:
            return "—"
        first, last = self.first.strftime("%Y-%m-%d %H:%M"), self.last.strftime("%H:%M")
        return f"{first} – {last}"

    @property
    def load_text(self) -> str:
        start = "—" if self.load is None else f"{self.load:.1f}"
        if not self.loads:
            return start
        ordered = sorted(self.loads)
        median = ordered[len(ordered) // 2]
        return f"{start}; runs {median:.1f} (max {ordered[-1]:.1f})"


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _started(folder: Path) -> dt.datetime | None:
    found = _STAMP.match(folder.name)
    if found is None:
        return None
    return dt.datetime.strptime(found[1], "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)


def _of(entry: dict[str, object], target: str | None) -> bool:
    """Whether an index line or a result.json is of `target` (`NAME` or `NAME@VERSION`)."""
    if target is None:
        return True
    name, _, version = target.partition("@")
    own, _, own_version = str(entry.get("target")).partition("@")
    return own == name and (not version or (entry.get("target_version") or own_version) == version)


def _results(folder: Path, target: str | None) -> list[Path]:
    found = []
    for path in folder.rglob("result.json"):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(result, dict) and _of(result, target):
            found.append(path.parent)
    return found


def sessions(folders: Sequence[Path], target: str | None = None) -> list[Session]:
    """Each folder as a session; with `target`, only that target's runs and refusals counted."""
    found: list[Session] = []
    for folder in folders:
        index = folder / SUITE_INDEX
        loads: tuple[float, ...] = ()
        if index.is_file():
            entries = [e for e in read_index(index) if _of(e, target)]
            runs = [Path(str(e["folder"])) for e in entries if "folder" in e]
            refused = sum(1 for e in entries if "refused" in e)
            loads = tuple(
                float(e["load"]) for e in entries if "folder" in e and _number(e.get("load"))
            )
        else:
            runs = _results(folder, target)
            refused = 0
        times = sorted(t for t in (_started(r) for r in runs) if t is not None)
        machine, load = None, None
        try:
            raw = json.loads((folder / SUITE_MACHINE).read_text(encoding="utf-8"))
            machine, load = Machine.from_json(raw["machine"]), float(raw["load_average"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        first, last = (times[0], times[-1]) if times else (None, None)
        found.append(Session(folder, len(runs), refused, first, last, machine, load, loads))
    return found
