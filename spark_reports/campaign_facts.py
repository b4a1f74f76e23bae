"""What a campaign's campaign.json says beyond its run folders: what was asked (budget,
seed, jobs, shard, cells), when it ran, the replays of recorded failures and how they came
out, and per run folder the failure database's word on it (the failure it showed, whether
that failure was new, whether a replay reproduced it).

A campaign folder is `<campaign>/campaign.json` beside `<campaign>/runs/<scenario>/<run>`
(`lab campaign`, `lab campaign merge`). It is read tolerantly: a report is never refused
for a campaign.json it cannot use; the campaign is then named with its `problem`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CampaignFacts", "CampaignRecord", "Campaigns", "read_campaign_facts"]


@dataclass(frozen=True)
class CampaignRecord:
    """campaign.json's record of one run: fresh or replay, the failure database's id of the
    failure it showed, whether that failure was new then, whether a replay reproduced it."""

    kind: str = "fresh"
    failure: str | None = None
    new_failure: bool = False
    reproduced: bool | None = None


@dataclass(frozen=True)
class CampaignFacts:
    """One campaign folder's campaign.json, as far as it could be read."""

    name: str
    folder: str
    started: str | None = None
    ended: str | None = None
    elapsed_s: float | None = None
    budget_s: float | None = None
    seed: int | None = None
    jobs: int | None = None
    shard: str | None = None
    cells: int = 0
    skipped: tuple[str, ...] = ()
    replays: tuple[tuple[str, str, str | None], ...] = ()
    """Each failure replayed: (id, outcome in this campaign, status after it)."""
    without_folder: tuple[str, ...] = ()
    """Runs that ended without a run folder, as `#number cell: error`."""
    records: Mapping[str, CampaignRecord] = field(default_factory=dict)
    """By run folder, relative to the campaign folder (`runs/<scenario>/<run>`)."""
    problem: str | None = None

    @property
    def new_failures(self) -> int:
        return sum(r.new_failure for r in self.records.values())


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _record(raw: Mapping[str, Any]) -> CampaignRecord:
    reproduced = raw.get("reproduced")
    return CampaignRecord(
        kind=str(raw.get("kind", "fresh")),
        failure=_text(raw.get("failure")),
        new_failure=raw.get("new_failure") is True,
        reproduced=reproduced if isinstance(reproduced, bool) else None,
    )


def _cell(raw: Mapping[str, Any]) -> str:
    return " · ".join(str(raw.get(k, "?")) for k in ("scenario", "target", "backend", "mode"))


def _facts(folder: Path, raw: Mapping[str, Any]) -> CampaignFacts:
    request = raw.get("request")
    request = request if isinstance(request, dict) else {}
    runs = [r for r in raw.get("runs", ()) if isinstance(r, dict)]
    seed = _number(request.get("seed"))
    jobs = _number(request.get("jobs"))
    replays = tuple(
        (str(r.get("failure")), str(r.get("outcome")), _text(r.get("status")))
        for r in raw.get("replays", ())
        if isinstance(r, dict)
    )
    return CampaignFacts(
        name=folder.name,
        folder=str(folder),
        started=_text(raw.get("started")),
        ended=_text(raw.get("ended")),
        elapsed_s=_number(raw.get("elapsed_s")),
        budget_s=_number(request.get("budget_s")),
        seed=None if seed is None else int(seed),
        jobs=None if jobs is None else int(jobs),
        shard=_text(request.get("shard")),
        cells=len([c for c in raw.get("cells", ()) if isinstance(c, dict)]),
        skipped=tuple(str(s) for s in raw.get("skipped", ())),
        replays=replays,
        without_folder=tuple(
            f"#{r.get('number')} {_cell(r)}: {r.get('error') or r.get('verdict')}"
            for r in runs
            if not _text(r.get("folder"))
        ),
        records={str(r["folder"]): _record(r) for r in runs if _text(r.get("folder"))},
    )


def read_campaign_facts(folder: Path) -> CampaignFacts | None:
    """The campaign in `folder` (None without a campaign.json there)."""
    path = folder / "campaign.json"
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        return _facts(folder, raw)
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        return CampaignFacts(folder.name, str(folder), problem=f"{path}: cannot be read: {exc}")


@dataclass
class Campaigns:
    """Which campaign a run folder belongs to (each campaign.json read once)."""

    _known: dict[Path, CampaignFacts | None] = field(default_factory=dict)

    def _at(self, folder: Path) -> CampaignFacts | None:
        if folder not in self._known:
            self._known[folder] = read_campaign_facts(folder)
        return self._known[folder]

    def of(self, run_folder: Path) -> tuple[CampaignFacts, CampaignRecord | None] | None:
        """The campaign of `<campaign>/runs/<scenario>/<run>` (or `<campaign>/<scenario>/<run>`)
        and its record of that run; None for a run outside a campaign."""
        scenario_dir = run_folder.parent
        for candidate in (scenario_dir.parent.parent, scenario_dir.parent):
            found = self._at(candidate)
            if found is not None:
                relative = run_folder.relative_to(candidate).as_posix()
                return found, found.records.get(relative)
        return None

    def seen(self) -> Iterable[CampaignFacts]:
        """Every campaign found so far, by folder."""
        return (facts for _, facts in sorted(self._known.items()) if facts is not None)
