"""Extract for the campaign view: one row per run folder, from its result.json, with the night
and the campaign it belongs to.

A run counts by what its result.json says. The verdict is kept as it is written (`held`,
`broken`, `unknown`, or any outcome a later lab writes): the view never guesses one. A run
without a usable result.json, or whose result.json has an `error`, has a `problem` and never
counts as a run; one whose verdict is `interrupted` is counted as interrupted, not as a
verdict. A run that replays another (`replay` in result.json) is counted apart: its seed was
chosen because it failed before, so it would bias the held rate.

The night of a run is the UTC day its campaign started (`started` in campaign.json, found
beside the campaign's `runs/` folder), else the day in the run folder's name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    StringType,
    StructField,
    StructType,
)

from spark_reports.run_folders import list_run_folders

__all__ = [
    "CAMPAIGN_RUNS",
    "CampaignRun",
    "Campaigns",
    "campaign_runs",
    "campaign_runs_frame",
    "read_campaign_run",
]

_STAMP = re.compile(r"^(\d{4})(\d{2})(\d{2})T\d{6}Z-")
_STARTED = re.compile(r"^(\d{4}-\d{2}-\d{2})T")
_DEFAULT_MODE = "replicated-group"  # a spec without `group` (lab.ground.spec)


def _fields(*pairs: tuple[str, Any]) -> StructType:
    return StructType([StructField(name, kind, True) for name, kind in pairs])


CAMPAIGN_RUNS = _fields(
    ("run_id", StringType()),
    ("folder", StringType()),
    ("scenario", StringType()),
    ("target", StringType()),
    ("backend", StringType()),
    ("mode", StringType()),
    ("night", StringType()),
    ("campaign", StringType()),
    ("outcome", StringType()),
    ("interrupted", BooleanType()),
    ("problem", StringType()),
    ("replay", BooleanType()),
    ("violations", ArrayType(StringType())),
    ("failover_s", ArrayType(DoubleType())),
)


@dataclass(frozen=True)
class CampaignRun:
    """One run folder as a flat row; field order is `CAMPAIGN_RUNS`."""

    run_id: str
    folder: str
    scenario: str
    target: str | None = None
    backend: str | None = None
    mode: str | None = None
    night: str | None = None
    campaign: str | None = None
    outcome: str | None = None
    interrupted: bool = False
    problem: str | None = None
    replay: bool = False
    violations: tuple[str, ...] = ()
    failover_s: tuple[float | None, ...] = ()

    def as_row(self) -> tuple[Any, ...]:
        return (
            self.run_id,
            self.folder,
            self.scenario,
            self.target,
            self.backend,
            self.mode,
            self.night,
            self.campaign,
            self.outcome,
            self.interrupted,
            self.problem,
            self.replay,
            list(self.violations),
            list(self.failover_s),
        )


@dataclass
class Campaigns:
    """Which campaign folder a run folder sits in, and the UTC day it started (cached)."""

    _known: dict[Path, tuple[str, str | None] | None] = field(default_factory=dict)

    def _campaign(self, folder: Path) -> tuple[str, str | None] | None:
        if folder not in self._known:
            self._known[folder] = None
            path = folder / "campaign.json"
            if path.is_file():
                started = None
                try:
                    raw = json.loads(path.read_text(encoding="utf-8"))
                    match = _STARTED.match(str(raw.get("started", "")))
                    started = match[1] if match else None
                except (OSError, ValueError, AttributeError):
                    pass
                self._known[folder] = (folder.name, started)
        return self._known[folder]

    def of(self, run_folder: Path) -> tuple[str, str | None] | None:
        """(campaign name, day it started) for `<campaign>/runs/<scenario>/<run>` (or
        `<campaign>/<scenario>/<run>`); None for a run outside a campaign."""
        scenario_dir = run_folder.parent
        for candidate in (scenario_dir.parent.parent, scenario_dir.parent):
            found = self._campaign(candidate)
            if found is not None:
                return found
        return None


def _json_object(path: Path) -> Mapping[str, Any]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    return raw


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _first_line(error: object) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _spec(folder: Path) -> Mapping[str, Any]:
    try:
        return _json_object(folder / "spec.json")
    except (OSError, ValueError):
        return {}


def _failovers(result: Mapping[str, Any]) -> tuple[float | None, ...]:
    metrics = result.get("metrics")
    values = metrics.get("failover_s") if isinstance(metrics, dict) else None
    if not isinstance(values, list):
        return ()
    return tuple(float(v) if isinstance(v, int | float) else None for v in values)


def _outcome(result: Mapping[str, Any] | None, missing: str | None) -> dict[str, Any]:
    """outcome, interrupted, problem, replay, violations, failover_s of a result.json."""
    if result is None:
        return {"problem": missing}
    if "error" in result:
        return {"problem": f"run did not finish: {_first_line(result['error'])}"}
    verdict = _text(result.get("verdict"))
    if verdict is None:
        return {"problem": "result.json has no verdict"}
    if verdict == "interrupted":
        reasons = result.get("reasons") or ["interrupted"]
        return {"interrupted": True, "problem": f"run was {_first_line(reasons[0])}"}
    kinds = result.get("violations")
    if isinstance(kinds, list):
        violations = tuple(sorted({str(k) for k in kinds}))
    else:  # a result.json older than violation kinds
        violations = () if verdict == "held" else ("(not recorded)",)
    return {
        "outcome": verdict,
        "replay": isinstance(result.get("replay"), dict),
        "violations": violations,
        "failover_s": _failovers(result),
    }


def read_campaign_run(folder: Path, campaigns: Campaigns | None = None) -> CampaignRun:
    """Read one run folder; never raises for a defective one, it sets `problem` instead."""
    result: Mapping[str, Any] | None = None
    missing = None
    try:
        result = _json_object(folder / "result.json")
    except FileNotFoundError:
        missing = "no result.json (killed, or still running)"
    except (OSError, ValueError) as exc:
        missing = f"unparsable result.json: {_first_line(exc)}"
    spec = _spec(folder) if result is None or "mode" not in result else {}
    group = spec.get("group")
    spec_mode = group.get("mode") if isinstance(group, dict) else None

    def named(key: str) -> str | None:
        return _text((result or {}).get(key)) or _text(spec.get(key))

    stamp = _STAMP.match(folder.name)
    night = f"{stamp[1]}-{stamp[2]}-{stamp[3]}" if stamp else None
    campaign = (campaigns or Campaigns()).of(folder)
    mode = _text((result or {}).get("mode")) or _text(spec_mode)
    return CampaignRun(
        run_id=f"{folder.parent.name}/{folder.name}",
        folder=str(folder),
        scenario=named("scenario") or folder.parent.name,
        target=named("target"),
        backend=named("backend"),
        mode=mode or (_DEFAULT_MODE if spec or result else None),
        night=(campaign[1] if campaign else None) or night,
        campaign=campaign[0] if campaign else None,
        **_outcome(result, missing),
    )


def campaign_runs(runs_dirs: Iterable[Path]) -> list[CampaignRun]:
    """Every run folder under `runs_dirs` (each run id once, as `list_run_folders`)."""
    campaigns = Campaigns()
    return [read_campaign_run(f, campaigns) for f in list_run_folders(runs_dirs)]


def campaign_runs_frame(spark: SparkSession, records: Iterable[CampaignRun]) -> DataFrame:
    """One row per run folder, `CAMPAIGN_RUNS`."""
    return spark.createDataFrame([r.as_row() for r in records], CAMPAIGN_RUNS)
