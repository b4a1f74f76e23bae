"""Which file each run folder's history and events are read from: the Parquet copies.

Before a job reads run folders, the driver makes sure each readable folder has fresh
history.parquet and events.parquet (`lab.judge.columnar`: rebuilt from the JSONL when
missing or older, a run killed half-way has none until then). The executors then read
Parquet. A folder whose copy cannot be made (a history that breaks the format, a folder
that cannot be written) is read from its JSONL instead, as before the copies existed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from lab.ground.errors import InputError
from lab.judge.columnar import events_parquet, history_parquet

__all__ = ["Sources", "columnar_sources"]


@dataclass(frozen=True)
class Sources:
    """Files to read: Parquet copies, and the folders whose JSONL must be read instead."""

    history_parquet: tuple[str, ...]
    history_jsonl: tuple[str, ...]
    events_parquet: tuple[str, ...]
    events_jsonl: tuple[str, ...]

    @property
    def folders(self) -> int:
        return len(self.history_parquet) + len(self.history_jsonl)


def _copies(folder: str) -> tuple[str | None, str | None]:
    try:
        history: str | None = str(history_parquet(Path(folder)))
    except InputError:
        history = None
    try:
        events: str | None = str(events_parquet(Path(folder)))
    except InputError:
        events = None
    return history, events


def columnar_sources(
    folders: Sequence[str], say: Callable[[str], None] = lambda text: None
) -> Sources:
    """The Parquet copies of `folders` (made where missing or stale), JSONL where impossible."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        copies = list(pool.map(_copies, folders))
    history = tuple(h for h, _ in copies if h is not None)
    events = tuple(e for _, e in copies if e is not None)
    sources = Sources(
        history_parquet=history,
        history_jsonl=tuple(f for f, (h, _) in zip(folders, copies, strict=True) if h is None),
        events_parquet=events,
        events_jsonl=tuple(f for f, (_, e) in zip(folders, copies, strict=True) if e is None),
    )
    if sources.history_jsonl:
        say(f"extract: {len(sources.history_jsonl)} histories without a Parquet copy, from JSONL")
    return sources
