"""The failure database: every broken or unknown run a campaign saw, one small JSON file
each under `.lab/failures/`, replayed first by the next campaign (as Hypothesis replays
its saved examples) until it is fixed.

    <scenario>-<id>.json   {"v", "id", "scenario", "target", "backend", "mode", "seed",
                            "durability", "verdict", "violations", "first_seen", "folder",
                            "source", "spec", "outcomes": [...], "status"}

Version 2 added `source`: where an imported record came from (lab.campaign.failure_import),
"" for one recorded here; a version 1 file reads as one with no source.

A failure is known by its spec without the lab's version (scenario, settings, seed and
schedule): the same spec failing again is one failure seen twice. Each replay appends an
outcome (verdict, violation kinds, whether it reproduced the recorded violation). Status:
`failing` while every replay reproduced it, `flaky` once one did not, `fixed` once the last
FIXED_AFTER replays all held.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lab.ground.errors import InputError, UsageError
from lab.ground.files import read_user_document, user_folder, write_json

__all__ = ["FIXED_AFTER", "Failure", "FailureDB", "Outcome", "failure_id"]

FIXED_AFTER = 3
DB_VERSION = 2
_VOLATILE = ("lab_version", "git_revision")


def failure_id(spec: Mapping[str, Any]) -> str:
    """The id of a failing spec: a digest of everything but the lab's version."""
    stable = {k: v for k, v in spec.items() if k not in _VOLATILE}
    text = json.dumps(stable, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Outcome:
    """One replay of a failure."""

    at: str
    verdict: str
    violations: tuple[str, ...]
    reproduced: bool
    folder: str

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "verdict": self.verdict,
            "violations": list(self.violations),
            "reproduced": self.reproduced,
            "folder": self.folder,
        }

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> Outcome:
        return Outcome(
            at=str(raw["at"]),
            verdict=str(raw["verdict"]),
            violations=tuple(str(v) for v in raw.get("violations", ())),
            reproduced=bool(raw["reproduced"]),
            folder=str(raw.get("folder", "")),
        )


@dataclass(frozen=True)
class Failure:
    id: str
    scenario: str
    target: str
    backend: str
    mode: str
    seed: int
    durability: str
    verdict: str
    violations: tuple[str, ...]
    first_seen: str
    folder: str
    spec: Mapping[str, Any]
    outcomes: tuple[Outcome, ...] = field(default=())
    source: str = ""  # imported: the artifact it came from (and its run folder there)

    @property
    def status(self) -> str:
        last = self.outcomes[-FIXED_AFTER:]
        if len(last) == FIXED_AFTER and all(o.verdict == "held" for o in last):
            return "fixed"
        if any(not o.reproduced for o in self.outcomes):
            return "flaky"
        return "failing"

    def reproduces(self, verdict: str, violations: tuple[str, ...]) -> bool:
        """A replay shows this failure when it shares a violation kind with it."""
        return verdict != "held" and bool(set(self.violations) & set(violations))

    def with_outcome(self, outcome: Outcome) -> Failure:
        return replace(self, outcomes=(*self.outcomes, outcome))

    def to_json(self) -> dict[str, Any]:
        return {
            "v": DB_VERSION,
            "id": self.id,
            "scenario": self.scenario,
            "target": self.target,
            "backend": self.backend,
            "mode": self.mode,
            "seed": self.seed,
            "durability": self.durability,
            "verdict": self.verdict,
            "violations": list(self.violations),
            "first_seen": self.first_seen,
            "folder": self.folder,
            "source": self.source,
            "status": self.status,
            "outcomes": [o.to_json() for o in self.outcomes],
            "spec": dict(self.spec),
        }

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> Failure:
        return Failure(
            id=str(raw["id"]),
            scenario=str(raw["scenario"]),
            target=str(raw["target"]),
            backend=str(raw["backend"]),
            mode=str(raw["mode"]),
            seed=int(raw["seed"]),
            durability=str(raw.get("durability", "")),
            verdict=str(raw["verdict"]),
            violations=tuple(str(v) for v in raw.get("violations", ())),
            first_seen=str(raw.get("first_seen", "")),
            folder=str(raw.get("folder", "")),
            spec=dict(raw["spec"]),
            outcomes=tuple(Outcome.from_json(o) for o in raw.get("outcomes", ())),
            source=str(raw.get("source", "")),
        )

    @staticmethod
    def of_run(folder: Path) -> Failure | None:
        """The failure a finished run folder shows; None when its prediction held or the run
        was interrupted."""
        spec = json.loads((folder / "spec.json").read_text(encoding="utf-8"))
        result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        verdict = str(result.get("verdict", "unknown"))
        if verdict in ("held", "interrupted"):  # an interrupted run showed nothing of the broker
            return None
        kinds = tuple(str(k) for k in result.get("violations", ())) or ("unknown",)
        durability = spec.get("durability", {})
        triplet = ",".join(
            str(durability.get(k, "")) for k in ("master_sync", "replica_sync", "ack_policy")
        )
        return Failure(
            id=failure_id(spec),
            scenario=str(spec["scenario"]),
            target=str(spec.get("target", "broker_ref"))
            + (f"@{spec['target_version']}" if spec.get("target_version") else ""),
            backend=str(spec.get("backend", "process")),
            mode=str(spec.get("group", {}).get("mode", "replicated-group")),
            seed=int(spec["seed"]),
            durability=triplet,
            verdict=verdict,
            violations=kinds,
            first_seen=_now(),
            folder=str(folder),
            spec=spec,
        )


class FailureDB:
    """The failures under `root` (default `.lab/failures`), one file each."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, failure: Failure) -> Path:
        return self.root / f"{failure.scenario}-{failure.id}.json"

    def __iter__(self) -> Iterator[Failure]:
        if not self.root.exists() and not self.root.is_symlink():
            return  # nothing recorded yet
        user_folder(self.root, "failure database")
        for path in sorted(self.root.glob("*.json")):
            yield self._read(path)

    def _read(self, path: Path) -> Failure:
        raw = read_user_document(path, "failure record", kind="json")
        try:
            return Failure.from_json(raw)
        except KeyError as exc:
            raise InputError(f"{path}: not a failure record: {exc} is missing") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"{path}: not a failure record: {exc}") from None

    def find(self, scenario: str, failure_id: str) -> Failure | None:
        """The record of that failure, if the database has one."""
        path = self.root / f"{scenario}-{failure_id}.json"
        return self._read(path) if path.is_file() else None

    def get(self, key: str) -> Failure:
        """A failure by its id, or by a prefix of it that names one."""
        found = [f for f in self if f.id.startswith(key) or f"{f.scenario}-{f.id}" == key]
        if not found:
            raise UsageError(f"no failure {key!r} in {self.root} (see `lab failures list`)")
        if len(found) > 1:
            raise UsageError(f"{key!r} names {len(found)} failures: give more of the id")
        return found[0]

    def record(self, failure: Failure) -> tuple[Failure, bool]:
        """Save a failure seen in a run; an already known one keeps its history and gets
        the run as an outcome. Returns the record and whether it is new."""
        path = self._path(failure)
        if path.is_file():
            known = self._read(path)
            seen = Outcome(_now(), failure.verdict, failure.violations, True, failure.folder)
            updated = known.with_outcome(seen)
            self.save(updated)
            return updated, False
        self.save(failure)
        return failure, True

    def save(self, failure: Failure) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        write_json(self._path(failure), failure.to_json())

    def add_outcome(
        self, failure: Failure, verdict: str, violations: tuple[str, ...], folder: str
    ) -> Failure:
        outcome = Outcome(
            _now(), verdict, violations, failure.reproduces(verdict, violations), folder
        )
        updated = self.get(failure.id).with_outcome(outcome)
        self.save(updated)
        return updated

    def forget(self, failure: Failure) -> None:
        self._path(failure).unlink(missing_ok=True)
