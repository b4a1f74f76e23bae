"""What the detection benchmark measured, read from what its commands wrote (campaign.json,
shrink.json, result.json), and its table and headline.

    CellResult      one campaign: a bug (None: the tree without one) × generator × trial
    ShrinkResult    `lab shrink` on a cell's first broken run
    NamedResult     one named scenario (J1 … C8) run once against a bug
    table(...)      the lines a terminal shows; headline(...) the last one

A campaign finds its bug at its first broken run; time to detection is from the moment the
campaign command started to the end of that run, in minutes of wall time.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CellResult",
    "NamedResult",
    "ShrinkResult",
    "cell_of_campaign",
    "headline",
    "median_minutes",
    "named_of_run",
    "named_summary",
    "shrink_of",
    "table",
]

NO_BUG = "(no bug)"
_STAMP = "%Y-%m-%dT%H:%M:%S.%fZ"


@dataclass(frozen=True)
class CellResult:
    bug: str | None  # None: the control, the tree without a bug
    design: str
    generator: str
    trial: int
    seed: int
    found: bool
    runs: int  # runs up to and including the first broken one; all of them when not found
    minutes: float | None  # to the end of the first broken run
    kinds: tuple[str, ...] = ()  # its violation kinds
    folder: str | None = None  # its run folder (inside the benchmark's scratch root)
    run_seed: int | None = None  # its seed: `lab run random --seed N` on the mutated tree
    unknown: int = 0  # runs whose verdict was unknown (counted, never taken for a finding)
    error: str | None = None  # the campaign itself failed

    @property
    def name(self) -> str:
        return self.bug or NO_BUG

    @property
    def row(self) -> tuple[str, str]:
        """(bug, design): the row it belongs to (the control has one per design)."""
        return self.name, self.design


@dataclass(frozen=True)
class ShrinkResult:
    bug: str
    generator: str
    outcome: str  # shrunk | did not reproduce | error
    operations: tuple[int, int] | None = None  # before, after
    load_s: tuple[float, float] | None = None
    reruns: int = 0

    def shown(self) -> str:
        if self.outcome == "shrunk" and self.operations is not None:
            before, after = self.operations
            return f"shrunk {before}→{after} ops"
        return self.outcome


@dataclass(frozen=True)
class NamedResult:
    bug: str | None
    scenario: str
    label: str  # J1 … C8
    verdict: str  # held | broken | unknown | refused | error
    kinds: tuple[str, ...] = ()
    reason: str | None = None  # why it was refused or failed to run

    @property
    def failed(self) -> bool:
        return self.verdict in ("broken", "unknown")

    @property
    def row(self) -> tuple[str, str]:
        """(bug, design): the row it belongs to (the design by the id: J or C)."""
        design = "replicated-group" if self.label.startswith("J") else "active-passive"
        return self.bug or NO_BUG, design


def _when(stamp: str) -> dt.datetime:
    return dt.datetime.strptime(stamp, _STAMP).replace(tzinfo=dt.UTC)


def cell_of_campaign(
    campaign: dict[str, Any],
    began: dt.datetime,
    *,
    bug: str | None,
    design: str,
    generator: str,
    trial: int,
    seed: int,
) -> CellResult:
    """The cell's result from its campaign.json; `began` when its command started (UTC)."""
    fresh = [r for r in campaign.get("runs", ()) if r.get("kind") != "replay"]
    fresh.sort(key=lambda r: int(r["number"]))
    unknown = sum(r.get("verdict") == "unknown" for r in fresh)
    for count, record in enumerate(fresh, start=1):
        if record.get("verdict") != "broken":
            continue
        ended = _when(str(record["started"])) + dt.timedelta(seconds=float(record["seconds"]))
        return CellResult(
            bug=bug,
            design=design,
            generator=generator,
            trial=trial,
            seed=seed,
            found=True,
            runs=count,
            minutes=round((ended - began).total_seconds() / 60, 2),
            kinds=tuple(str(k) for k in record.get("violations", ())),
            folder=record.get("folder"),
            run_seed=int(record["seed"]),
            unknown=sum(r.get("verdict") == "unknown" for r in fresh[:count]),
        )
    return CellResult(bug, design, generator, trial, seed, False, len(fresh), None, unknown=unknown)


def shrink_of(bug: str, generator: str, returncode: int, out: Path) -> ShrinkResult:
    """`lab shrink`'s outcome: exit 4 did not reproduce; 0 its shrink.json; else an error."""
    if returncode == 4:
        return ShrinkResult(bug, generator, "did not reproduce")
    try:
        saved = json.loads((out / "shrink.json").read_text(encoding="utf-8"))
        before, after = (int(n) for n in saved["operations"])
        load_before, load_after = (float(s) for s in saved["load_s"])
        reruns = int(saved["reruns"])
    except (OSError, ValueError, KeyError, TypeError):
        return ShrinkResult(bug, generator, "error")
    if returncode != 0:
        return ShrinkResult(bug, generator, "error")
    return ShrinkResult(
        bug, generator, "shrunk", (before, after), (load_before, load_after), reruns
    )


def named_of_run(
    bug: str | None, scenario: str, label: str, returncode: int, stdout: str, stderr: str
) -> NamedResult:
    """A named run's verdict from its result.json (the folder is stdout's first line); else
    `refused` when it was refused before it started (exit 2, no run folder), `error` when
    it failed on the way (a cluster that never got ready …), each with the lab's reason."""
    lines = stdout.splitlines()
    folder = Path(lines[0].strip()) if lines else None
    if folder is not None and (folder / "result.json").is_file():
        result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        kinds = tuple(str(k) for k in result.get("violations", ()))
        return NamedResult(bug, scenario, label, str(result.get("verdict", "unknown")), kinds)
    said = [line.removeprefix("lab: ") for line in stderr.splitlines() if line.startswith("lab:")]
    errors = [line for line in said if line.startswith("error:")]
    reason = (errors or said or [f"exit status {returncode}"])[0]
    started = any(line.startswith("run folder:") for line in said)
    verdict = "refused" if returncode == 2 and not started else "error"
    return NamedResult(bug, scenario, label, verdict, reason=reason)


def median_minutes(cells: Iterable[CellResult]) -> float | None:
    found = [c.minutes for c in cells if c.found and c.minutes is not None]
    return round(statistics.median(found), 2) if found else None


def _bugs_found(cells: Sequence[CellResult], generator: str) -> tuple[int, int]:
    """(bugs found in at least one trial, bugs) for `generator`, the control left out."""
    by_bug: dict[str, bool] = {}
    for c in cells:
        if c.bug is not None and c.generator == generator:
            by_bug[c.bug] = by_bug.get(c.bug, False) or c.found
    return sum(by_bug.values()), len(by_bug)


def headline(cells: Sequence[CellResult], generators: Sequence[str], budget_s: float) -> str:
    """`detection: random 7/12 found, median 3.1 min; coverage 12/12, median 1.2 min (2.6x)`:
    per generator the bugs found in at least one trial and the median time to detection
    over the trials that found one; the ratio is the first generator's median over each
    other's (how many times faster that one found its bugs)."""
    parts: list[str] = []
    first = median_minutes(c for c in cells if c.bug and c.generator == generators[0])
    for i, generator in enumerate(generators):
        found, total = _bugs_found(cells, generator)
        median = median_minutes(c for c in cells if c.bug and c.generator == generator)
        shown = "none found" if median is None else f"median {median:.1f} min"
        part = f"{generator} {found}/{total}{' found' if i == 0 else ''}, {shown}"
        if i and median and first:
            part += f" ({first / median:.1f}x)"
        parts.append(part)
    trials = max((c.trial for c in cells), default=0)
    return (
        f"detection: {'; '.join(parts)} (campaigns of {budget_s / 60:g} min, "
        f"{trials} trial{'s' if trials != 1 else ''} each)"
    )


def named_summary(named: Sequence[NamedResult]) -> str:
    """How many bugs the named scenarios caught: a bug is caught when a scenario fails with it
    that held on the tree without a bug (a scenario failing there too catches nothing)."""
    clean_held = {n.scenario for n in named if n.bug is None and n.verdict == "held"}
    clean = [n for n in named if n.bug is None]
    bugs = {n.bug for n in named if n.bug is not None}
    caught = {n.bug for n in named if n.bug and n.failed and n.scenario in clean_held}
    return (
        f"named scenarios caught {len(caught)}/{len(bugs)} bugs "
        f"({len(clean_held)}/{len(clean)} held without a bug)"
    )


def _cell_text(cells: list[CellResult], shrink: ShrinkResult | None) -> str:
    found = [c for c in cells if c.found]
    errors = [c for c in cells if c.error]
    text = f"{len(found)}/{len(cells)}"
    median = median_minutes(found)
    if median is not None:
        runs = statistics.median(c.runs for c in found)
        text += f" {median:.1f} min {runs:g} runs"
    else:
        text += f" ({sum(c.runs for c in cells)} runs)"
    if errors:
        text += f" ({len(errors)} failed to run)"
    if shrink is not None:
        text += f", {shrink.shown()}"
    return text


def table(
    cells: Sequence[CellResult],
    shrinks: Sequence[ShrinkResult],
    named: Sequence[NamedResult],
    generators: Sequence[str],
) -> list[str]:
    """bug × generator (found k/trials, median minutes and runs to detection, the shrink),
    the kinds seen, and with named runs which scenarios failed with the bug."""
    rows = list(dict.fromkeys([*(c.row for c in cells), *(n.row for n in named)]))
    width = max([len(name) for name, _ in rows] + [3])
    lines = [f"{'bug':<{width}}  {'design':<16}  " + "  ".join(f"{g:<34}" for g in generators)]
    for row in rows:
        name, design = row
        texts = []
        for generator in generators:
            mine = [c for c in cells if c.row == row and c.generator == generator]
            shrink = next((s for s in shrinks if s.bug == name and s.generator == generator), None)
            texts.append(f"{_cell_text(mine, shrink) if mine else '-':<34}")
        lines.append(f"{name:<{width}}  {design:<16}  " + "  ".join(texts))
        kinds = sorted({k for c in cells if c.row == row and c.found for k in c.kinds})
        if kinds:
            lines.append(f"{'':<{width}}  kinds seen: {', '.join(kinds)}")
        for error in sorted({c.error for c in cells if c.row == row and c.error}):
            lines.append(f"{'':<{width}}  a campaign failed: {error}")
        mine_named = [n for n in named if n.row == row]
        if mine_named:
            failed = [
                f"{n.label} {n.scenario} ({', '.join(n.kinds) or n.verdict})"
                for n in mine_named
                if n.failed
            ]
            odd = [
                f"{n.label} {n.verdict}" for n in mine_named if n.verdict in ("refused", "error")
            ]
            lines.append(
                f"{'':<{width}}  named: {len(failed)}/{len(mine_named)} fail"
                + (f": {'; '.join(failed)}" if failed else "")
                + (f" [{'; '.join(odd)}]" if odd else "")
            )
    return lines


def to_json(
    cells: Sequence[CellResult], shrinks: Sequence[ShrinkResult], named: Sequence[NamedResult]
) -> dict[str, Any]:
    return {
        "cells": [{k: v for k, v in asdict(c).items() if k != "folder"} for c in cells],
        "shrinks": [asdict(s) for s in shrinks],
        "named": [asdict(n) for n in named],
    }
