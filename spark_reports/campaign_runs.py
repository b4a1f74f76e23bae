"""Extract for the campaign view: one row per run folder, from its result.json, with the night
and the campaign it belongs to.

A run counts by what its result.json says. The verdict is kept as it is written (`held`,
`broken`, `unknown`, or any outcome a later lab writes): the view never guesses one. A run
without a usable result.json, or whose result.json has an `error`, has a `problem` and never
counts as a run; one whose verdict is `interrupted` is counted as interrupted, not as a
verdict. A run that replays another (`replay` in result.json, or a replay in its campaign's
campaign.json) is counted apart: its seed was chosen because it failed before, so it would
bias the held rate.

The night of a run is the UTC day its campaign started (`started` in campaign.json, found
beside the campaign's `runs/` folder), else the day in the run folder's name. What the
campaign's failure database said of a failing run (`campaign_facts`) is kept as `known`:

    new       the failure database had no record of its failure (its spec) before this run
    recorded  the failure database knew it already (the same spec failed before)
    replay    the run replayed a recorded failure (its seed failed before)
    null      the run is not in a campaign (or its campaign did not record it)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from spark_reports.campaign_facts import CampaignRecord, Campaigns
from spark_reports.run_folders import list_run_folders

__all__ = [
    "CAMPAIGN_RUNS",
    "CampaignRun",
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
    ("seed", LongType()),
    ("reproduce", StringType()),
    ("failure", StringType()),
    ("known", StringType()),
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
    seed: int | None = None
    reproduce: str | None = None
    failure: str | None = None
    known: str | None = None

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
            self.seed,
            self.reproduce,
            self.failure,
            self.known,
        )


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
    found = (campaigns or Campaigns()).of(folder)
    facts, record = found if found is not None else (None, None)
    started = _STARTED.match(facts.started or "") if facts is not None else None
    mode = _text((result or {}).get("mode")) or _text(spec_mode)
    outcome = _outcome(result, missing)
    if record is not None and record.kind == "replay" and "outcome" in outcome:
        outcome["replay"] = True  # a campaign replays a failure as `lab run --spec`
    seed = (result or {}).get("seed", spec.get("seed"))
    return CampaignRun(
        run_id=f"{folder.parent.name}/{folder.name}",
        folder=str(folder),
        scenario=named("scenario") or folder.parent.name,
        target=named("target"),
        backend=named("backend"),
        mode=mode or (_DEFAULT_MODE if spec or result else None),
        night=(started[1] if started else None) or night,
        campaign=None if facts is None else facts.name,
        seed=seed if type(seed) is int and 0 <= seed < 2**63 else None,
        reproduce=_text((result or {}).get("reproduce")),
        failure=None if record is None else record.failure,
        known=_known(record, outcome),
        **outcome,
    )


def _known(record: CampaignRecord | None, outcome: dict[str, Any]) -> str | None:
    """What the campaign's failure database said of a run that did not hold (`known`)."""
    if record is None or outcome.get("outcome") in (None, "held"):
        return None
    if record.kind == "replay":
        return "replay"
    if record.failure is None:
        return None
    return "new" if record.new_failure else "recorded"


def campaign_runs(runs_dirs: Iterable[Path]) -> list[CampaignRun]:
    """Every run folder under `runs_dirs` (each run id once, as `list_run_folders`)."""
    campaigns = Campaigns()
    return [read_campaign_run(f, campaigns) for f in list_run_folders(runs_dirs)]


def campaign_runs_frame(spark: SparkSession, records: Iterable[CampaignRun]) -> DataFrame:
    """One row per run folder, `CAMPAIGN_RUNS`."""
    return spark.createDataFrame([r.as_row() for r in records], CAMPAIGN_RUNS)
