"""Find run folders under RUNS_DIRs and read each one's spec.json and result.json into a record.

A run folder is `<scenario>/<UTC yyyymmddTHHMMSSZ>-<seed>` (docs/run-folder.md); its run
id is that relative path. These files are small, so the driver reads them with plain Python,
which lets every defect be named per folder: a killed run (no result.json, or one with an
`error`), a torn last line in history.jsonl or events.jsonl, an unparsable spec. Such a run
gets a `problem` and never counts as held.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import astuple, dataclass, replace
from pathlib import Path
from typing import Any

from lab.ground.errors import InputError, UsageError
from lab.ground.spec import RunSpec

__all__ = [
    "RUN_FILES",
    "RunRecord",
    "find_run_folders",
    "list_run_folders",
    "read_run",
    "read_runs",
]

RUN_FILES = ("spec.json", "history.jsonl", "events.jsonl", "result.json")
_STAMP = re.compile(r"^(\d{4})(\d{2})(\d{2})T(\d{6})Z-\d+(\.\d+)?$")
_TAIL_BYTES = 4096


@dataclass(frozen=True)
class RunRecord:
    """One run folder as a flat row; field order is `schemas.RUNS`."""

    run_id: str
    folder: str
    scenario: str
    date: str | None
    stamp: str | None
    problem: str | None = None
    seed: int | None = None
    target: str | None = None
    backend: str | None = None
    nodes: int | None = None
    master_sync: str | None = None
    replica_sync: str | None = None
    ack_policy: str | None = None
    coalescing_sync: bool | None = None
    producers: int | None = None
    consumers: int | None = None
    size: int | None = None
    git_revision: str | None = None
    lab_version: str | None = None
    verdict: str | None = None
    reasons: tuple[str, ...] | None = None
    reproduce: str | None = None
    acknowledged: int | None = None
    received: int | None = None
    lost: int | None = None
    duplicated: int | None = None
    duplicate_deliveries: int | None = None
    resurrected: int | None = None
    unexpected: int | None = None
    operations: int | None = None
    workload_s: float | None = None
    acknowledged_per_s: float | None = None
    unavailable_total_s: float | None = None
    unavailable_longest_s: float | None = None
    failover_s: tuple[float | None, ...] | None = None
    two_masters_seen: bool | None = None

    def as_row(self) -> tuple[Any, ...]:
        row = list(astuple(self))
        for position in (20, 34):  # reasons, failover_s: arrays in the schema
            if row[position] is not None:
                row[position] = list(row[position])
        return tuple(row)


def _is_run_folder(path: Path) -> bool:
    return path.is_dir() and any((path / name).exists() for name in RUN_FILES)


def find_run_folders(runs_dir: Path) -> Iterator[Path]:
    """Run folders in `runs_dir`: itself, its children or its grandchildren; `latest` skipped.

    Raises `UsageError` if `runs_dir` is not a directory.
    """
    if not runs_dir.is_dir():
        raise UsageError(f"runs directory {runs_dir} does not exist or is not a directory")
    if _is_run_folder(runs_dir):
        yield runs_dir
        return
    for child in sorted(runs_dir.iterdir()):
        if child.is_symlink() or not child.is_dir():
            continue
        if _is_run_folder(child):
            yield child
            continue
        for grandchild in sorted(child.iterdir()):
            if not grandchild.is_symlink() and _is_run_folder(grandchild):
                yield grandchild


def _torn(path: Path) -> bool:
    """True if a JSONL file does not end with a complete line."""
    size = path.stat().st_size
    if size == 0:
        return False
    with path.open("rb") as stream:
        stream.seek(max(0, size - _TAIL_BYTES))
        tail = stream.read()
    if not tail.endswith(b"\n"):
        return True
    last = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        json.loads(last)
    except ValueError:
        return True
    return False


def _json_object(path: Path) -> Mapping[str, Any]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    return raw


def _with_spec(record: RunRecord, folder: Path) -> RunRecord:
    """Add the spec's fields; raises `InputError` or `ValueError` if it cannot be parsed."""
    spec = RunSpec.from_json(_json_object(folder / "spec.json"), folder / "spec.json")
    d, w = spec.durability, spec.workload
    return replace(
        record,
        scenario=spec.scenario,
        seed=spec.seed,
        target=spec.target,
        backend=spec.backend,
        nodes=spec.topology.nodes,
        master_sync=d.master_sync,
        replica_sync=d.replica_sync,
        ack_policy=d.ack_policy,
        coalescing_sync=d.coalescing_sync,
        producers=w.producers,
        consumers=w.consumers,
        size=w.size,
        git_revision=spec.git_revision,
        lab_version=spec.lab_version,
    )


def _count(check: Mapping[str, Any], key: str) -> int:
    value = check[key]
    return int(value["count"] if isinstance(value, Mapping) else value)


def _with_result(record: RunRecord, result: Mapping[str, Any]) -> RunRecord:
    """Add result.json's verdict, check and metrics; raises KeyError/TypeError/ValueError."""
    check, metrics = result["check"], result["metrics"]
    verdict = str(result["verdict"])
    if verdict not in ("held", "broken", "unknown", "deviation"):
        raise ValueError(f"verdict {verdict!r}")
    return replace(
        record,
        verdict=verdict,
        reasons=tuple(str(r) for r in result.get("reasons", [])),
        reproduce=str(result.get("reproduce", "")),
        acknowledged=int(check["acknowledged"]),
        received=int(check["received"]),
        lost=_count(check, "lost"),
        duplicated=_count(check, "duplicated"),
        duplicate_deliveries=int(check.get("duplicate_deliveries", 0)),
        resurrected=_count(check, "resurrected"),
        unexpected=_count(check, "unexpected"),
        operations=int(metrics["operations"]),
        workload_s=float(metrics["workload_s"]),
        acknowledged_per_s=float(metrics["acknowledged_per_s"]),
        unavailable_total_s=float(metrics["unavailable_total_s"]),
        unavailable_longest_s=float(metrics["unavailable_longest_s"]),
        failover_s=tuple(None if f is None else float(f) for f in metrics["failover_s"]),
        two_masters_seen=bool(metrics["two_masters_seen"]),
    )


def read_run(folder: Path) -> RunRecord:
    """Read one run folder; never raises for a defective folder, it sets `problem` instead."""
    match = _STAMP.match(folder.name)
    date = f"{match[1]}-{match[2]}-{match[3]}" if match else None
    stamp = folder.name.split("-", 1)[0] if match else None
    record = RunRecord(
        run_id=f"{folder.parent.name}/{folder.name}",
        folder=str(folder),
        scenario=folder.parent.name,
        date=date,
        stamp=stamp,
    )
    try:
        record = _with_spec(record, folder)
    except FileNotFoundError:
        return replace(record, problem="no spec.json")
    except (OSError, ValueError, InputError) as exc:
        return replace(record, problem=f"unparsable spec.json: {_first_line(exc)}")
    try:
        result = _json_object(folder / "result.json")
    except FileNotFoundError:
        return replace(record, problem="no result.json (killed, or still running)")
    except (OSError, ValueError) as exc:
        return replace(record, problem=f"unparsable result.json: {_first_line(exc)}")
    if "error" in result:
        return replace(
            record,
            problem=f"run did not finish: {_first_line(result['error'])}",
            reproduce=str(result.get("reproduce", "")) or None,
        )
    if result.get("verdict") == "interrupted":
        reasons = result.get("reasons") or ["interrupted"]
        return replace(
            record,
            problem=f"run was {_first_line(reasons[0])}",
            reproduce=str(result.get("reproduce", "")) or None,
        )
    try:
        record = _with_result(record, result)
    except (KeyError, TypeError, ValueError) as exc:
        return replace(record, problem=f"incomplete result.json: {type(exc).__name__} {exc}")
    for name in ("history.jsonl", "events.jsonl"):
        path = folder / name
        if not path.is_file():
            return replace(record, problem=f"no {name}")
        if _torn(path):
            return replace(record, problem=f"torn last line in {name}")
    return record


def _first_line(error: object) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def list_run_folders(runs_dirs: Iterable[Path]) -> list[Path]:
    """Every run folder under `runs_dirs` (resolved), each run id `<scenario>/<folder>` once:
    the first directory given wins."""
    seen: set[str] = set()
    folders: list[Path] = []
    for runs_dir in runs_dirs:
        for folder in find_run_folders(runs_dir):
            resolved = folder.resolve()
            run_id = f"{resolved.parent.name}/{resolved.name}"
            if run_id not in seen:
                seen.add(run_id)
                folders.append(resolved)
    return folders


def read_runs(runs_dirs: Iterable[Path]) -> list[RunRecord]:
    """Every run folder under `runs_dirs`, each run id once (the first directory given wins)."""
    return [read_run(folder) for folder in list_run_folders(runs_dirs)]
