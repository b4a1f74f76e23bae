"""The detection benchmark's store: every trial, shrink and named run appended as it ends, so a
whole round (every bug × generator × trial) can be run in slices, across days, and still make
one page (`lab bench detection --page FILE --from-store`).

A store is a folder (default `.lab/bench/detection/`) holding `trials.jsonl`, one JSON object
a line, each written whole with one append:

    {"v": 1, "record": "trial" | "shrink" | "named", "stored": "2026-12-06T10:00:00Z",
     "version": "g-…", "commit": "…", "budget_s": 600.0, "bug_digest": "…" | null,
     "command": "lab bench detection …", "machine": "…", "result": {…the result's fields}}

`version` is the generator's (lab.bench.detection_version): a page counts only the records
of the current one, of one budget, of bugs whose code is still what it was; of the same bug,
generator and campaign seed the latest trial counts; the rest are left out, counted by
reason. A line cut short by a crash (the last one) is passed over; any other line that is
not a record is an InputError naming it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from lab.bench.detection_results import CellResult, NamedResult, ShrinkResult
from lab.ground.errors import InputError, UsageError

__all__ = [
    "DEFAULT_STORE",
    "STORE_VERSION",
    "Selection",
    "Stamp",
    "TrialStore",
    "latest_budget",
    "select",
]

STORE_VERSION = 1
DEFAULT_STORE = Path(".lab") / "bench" / "detection"
FILE = "trials.jsonl"
KINDS = ("trial", "shrink", "named")


@dataclass(frozen=True)
class Stamp:
    """What every record of one benchmark command carries."""

    version: str  # the generator's
    commit: str  # the lab's
    budget_s: float
    command: str
    machine: str


def _result_json(result: CellResult | ShrinkResult | NamedResult) -> dict[str, Any]:
    out = asdict(result)
    out.pop("folder", None)  # a scratch folder, gone once the benchmark ends
    return out


def _tuples(kind: type[Any], raw: Mapping[str, Any], *names: str) -> dict[str, Any]:
    """A stored result's fields as `kind` takes them: lists back into tuples; a field this
    lab does not know (a newer lab stored it) left out."""
    known = {f.name for f in fields(kind)}
    out = {k: v for k, v in raw.items() if k in known}
    for name in names:
        if out.get(name) is not None:
            out[name] = tuple(out[name])
    return out


class TrialStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / FILE

    def check(self) -> None:
        """UsageError, before anything runs, when the store cannot be written."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise UsageError(f"--store {self.folder}: cannot write: {exc.strerror or exc}") from exc

    def append(
        self,
        result: CellResult | ShrinkResult | NamedResult,
        stamp: Stamp,
        bug_digest: str | None,
    ) -> None:
        kind = {CellResult: "trial", ShrinkResult: "shrink", NamedResult: "named"}[type(result)]
        record = {
            "v": STORE_VERSION,
            "record": kind,
            "stored": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            **asdict(stamp),
            "bug_digest": bug_digest,
            "result": _result_json(result),
        }
        line = (json.dumps(record, sort_keys=True) + "\n").encode("utf-8")
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)  # one write: records of two benchmarks never interleave
        finally:
            os.close(fd)

    def read(self) -> list[dict[str, Any]]:
        """Every record, oldest first; none when the store does not exist yet."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read: {exc.strerror or exc}") from exc
        lines = text.split("\n")
        records = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if record.get("v") != STORE_VERSION or record.get("record") not in KINDS:
                    raise ValueError("not a record of this store's version")
                if not isinstance(record.get("result"), dict):
                    raise ValueError("no result")
            except (ValueError, AttributeError) as exc:
                if number == len(lines):  # the last line, never finished
                    continue
                raise InputError(f"{self.path}:{number}: not a stored record ({exc})") from exc
            records.append(record)
        return records


@dataclass(frozen=True)
class Selection:
    """The records a page counts, and how many of the store's were left out, by reason."""

    cells: tuple[CellResult, ...]
    shrinks: tuple[ShrinkResult, ...]
    named: tuple[NamedResult, ...]
    left_out: Mapping[str, int] = field(default_factory=dict)
    commits: tuple[str, ...] = ()  # the lab's commits the counted records came from
    commands: tuple[str, ...] = ()
    machines: tuple[str, ...] = ()
    first: str | None = None  # when the first and last counted records were stored
    last: str | None = None

    def left_out_text(self) -> str:
        if not self.left_out:
            return "none left out"
        parts = [f"{n} {why}" for why, n in sorted(self.left_out.items(), key=lambda x: -x[1])]
        return f"{sum(self.left_out.values())} left out: " + "; ".join(parts)


def _why_left_out(
    record: Mapping[str, Any], version: str, budget_s: float, digests: Mapping[str, str]
) -> str | None:
    if record.get("version") != version:
        return f"of another generator version ({record.get('version')})"
    if float(record.get("budget_s", 0.0)) != budget_s:
        return f"of another budget ({float(record.get('budget_s', 0.0)) / 60:g} min)"
    bug = record["result"].get("bug")
    if bug is not None and bug not in digests:
        return "of a bug no longer in the zoo"
    if bug is not None and record.get("bug_digest") != digests[bug]:
        return "of a bug whose code changed since"
    return None


def _key(record: Mapping[str, Any]) -> tuple[Any, ...]:
    r = record["result"]
    if record["record"] == "trial":
        return ("trial", r["bug"], r["design"], r["generator"], r["seed"])
    if record["record"] == "shrink":
        return ("shrink", r["bug"], r["generator"])
    return ("named", r["bug"], r["scenario"])


def select(
    records: Sequence[Mapping[str, Any]],
    version: str,
    budget_s: float,
    digests: Mapping[str, str],
    after: Mapping[str, bool] | None = None,
) -> Selection:
    """The records of `version` and `budget_s`, of bugs whose digest is still `digests`'s
    (bug → Bug.digest), the latest of each trial (bug, design, generator, campaign seed) —
    but never one that failed to run over one that ran — shrink and named run; `after`
    (bug → after_generator, from today's zoo) overrides what a trial stored, so a bug marked
    later moves to its set."""
    left_out: Counter[str] = Counter()
    latest: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    for record in records:
        why = _why_left_out(record, version, budget_s, digests)
        if why is not None:
            left_out[f"trial(s) {why}" if record["record"] == "trial" else f"other {why}"] += 1
            continue
        key = _key(record)
        if key in latest and record["record"] == "trial":
            if record["result"].get("error") and not latest[key]["result"].get("error"):
                left_out["trial(s) that failed to run again (the one that ran counts)"] += 1
                continue
            left_out["trial(s) run again later (the latest counts)"] += 1
        latest[key] = record
    cells, shrinks, named = [], [], []
    for key, record in latest.items():
        raw = record["result"]
        if key[0] == "trial":
            cell = CellResult(**_tuples(CellResult, raw, "kinds"))
            if after is not None and cell.bug is not None and cell.bug in after:
                cell = CellResult(**{**asdict(cell), "after_generator": after[cell.bug]})
            cells.append(cell)
        elif key[0] == "shrink":
            shrinks.append(ShrinkResult(**_tuples(ShrinkResult, raw, "operations", "load_s")))
        else:
            named.append(NamedResult(**_tuples(NamedResult, raw, "kinds")))
    counted = list(latest.values())
    stored = sorted(str(r.get("stored", "")) for r in counted)
    return Selection(
        cells=tuple(cells),
        shrinks=tuple(shrinks),
        named=tuple(named),
        left_out=dict(left_out),
        commits=tuple(dict.fromkeys(str(r.get("commit")) for r in counted)),
        commands=tuple(dict.fromkeys(str(r.get("command")) for r in counted)),
        machines=tuple(dict.fromkeys(str(r.get("machine")) for r in counted)),
        first=stored[0] if stored else None,
        last=stored[-1] if stored else None,
    )


def latest_budget(records: Sequence[Mapping[str, Any]], version: str) -> float | None:
    """The budget of the latest trial of `version` (a page from the store without --budget)."""
    budgets = [
        float(r["budget_s"])
        for r in records
        if r.get("record") == "trial" and r.get("version") == version
    ]
    return budgets[-1] if budgets else None
