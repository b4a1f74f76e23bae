"""What the detection benchmark measured, read from what its commands wrote (campaign.json,
the runs' schedule.jsonl, shrink.json, result.json).

    CellResult      one trial: a campaign against a bug (None: the tree without one) by one
                    generator, its trial number and campaign seed; found or not, when, after
                    how many runs and faults, and when its canaries first saw the bug
    ShrinkResult    `lab shrink` on a bug's first broken run
    NamedResult     one named scenario (J1 … C8) run once against a bug

A campaign finds its bug at its first broken run; every time of a trial is in minutes from
the moment the campaign command started (wall time): its detection at the end of that run,
its `reached` and `triggered` at the first canary line of each kind (lab.bench.detection_canary).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "NO_BUG",
    "CellResult",
    "NamedResult",
    "ShrinkResult",
    "cell_of_campaign",
    "faults_applied",
    "named_of_run",
    "shrink_of",
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
    canary: bool = False  # the bug has canaries: `reached` and `triggered` mean something
    reached: float | None = None  # minutes to the first canary line "reached"
    triggered: float | None = None  # minutes to the first canary line "triggered"
    after_generator: bool = False  # the bug was written after the generator was settled
    campaign_s: float | None = None  # the campaign command's wall time, start to end
    run_s: float = 0.0  # the runs' own seconds (those counted in `runs`)
    faults: int = 0  # faults applied in those runs (their schedule.jsonl)
    first_run_s: float | None = None  # from the command's start to its first run's start
    gaps_s: float = 0.0  # between those runs: from one's end to the next one's start

    @property
    def end_s(self) -> float | None:
        """From the end of its last run counted to the end of the campaign command."""
        if self.campaign_s is None or self.first_run_s is None:
            return None
        return max(0.0, self.campaign_s - self.first_run_s - self.run_s - self.gaps_s)

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
    reached: bool | None = None  # its canaries said `reached` (None: the bug has none)
    triggered: bool | None = None

    @property
    def stage(self) -> str:
        """` · triggered`, ` · reached` or ` · not reached` after its verdict ("" without
        canaries): a held run that triggered the bug is the checker's miss."""
        if self.reached is None and self.triggered is None:
            return ""
        if self.triggered:
            return " · triggered"
        return " · reached" if self.reached else " · not reached"

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


def faults_applied(run_folder: Path) -> int:
    """The faults a run applied: the `applied` lines of its schedule.jsonl that started a
    fault and worked (0 when the run left no schedule)."""
    try:
        text = (run_folder / "schedule.jsonl").read_text(encoding="utf-8")
    except OSError:
        return 0
    count = 0
    for line in text.splitlines():
        try:
            op = json.loads(line)
        except ValueError:
            continue
        if op.get("phase") == "applied" and op.get("action") == "start" and op.get("ok"):
            count += 1
    return count


def _counted(
    fresh: Sequence[dict[str, Any]], began: dt.datetime, campaign_dir: Path | None
) -> dict[str, Any]:
    """What the runs of a trial add up to: their seconds, faults and the first one's start."""
    faults = 0
    if campaign_dir is not None:
        faults = sum(faults_applied(campaign_dir / r["folder"]) for r in fresh if r.get("folder"))
    first = None
    if fresh and fresh[0].get("started"):
        first = round((_when(str(fresh[0]["started"])) - began).total_seconds(), 2)
    gaps = 0.0
    for one, then in itertools.pairwise(fresh):
        if one.get("started") and then.get("started"):
            ended = _when(str(one["started"])) + dt.timedelta(seconds=float(one["seconds"]))
            gaps += max(0.0, (_when(str(then["started"])) - ended).total_seconds())
    return {
        "gaps_s": round(gaps, 2),
        "run_s": round(sum(float(r.get("seconds", 0.0)) for r in fresh), 2),
        "faults": faults,
        "first_run_s": first,
        "unknown": sum(r.get("verdict") == "unknown" for r in fresh),
    }


def cell_of_campaign(
    campaign: dict[str, Any],
    began: dt.datetime,
    *,
    bug: str | None,
    design: str,
    generator: str,
    trial: int,
    seed: int,
    campaign_dir: Path | None = None,
) -> CellResult:
    """The trial's result from its campaign.json; `began` when its command started (UTC);
    with `campaign_dir` the faults its runs applied are counted from their run folders."""
    fresh = [r for r in campaign.get("runs", ()) if r.get("kind") != "replay"]
    fresh.sort(key=lambda r: int(r["number"]))
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
            **_counted(fresh[:count], began, campaign_dir),
        )
    return CellResult(
        bug,
        design,
        generator,
        trial,
        seed,
        False,
        len(fresh),
        None,
        **_counted(fresh, began, campaign_dir),
    )


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
