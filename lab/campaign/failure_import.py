"""Failure records made elsewhere, joined into a failure database: a nightly's `failures`
artifact on a laptop (`lab failures import`), and the shards' databases into the night's
(`lab nightly merge`).

    found = read_records(sources)            every record of each source: a folder of
                                             `<scenario>-<id>.json` files or a .zip of one
                                             (an artifact as a browser downloads it); all
                                             read and checked before anything is written
    merged = merge_records(db, found, local)  what changed: ImportedRecord per record

Nothing newer is ever overwritten: a failure the database already has is joined with the
one coming in — the outcomes of both in time order (each replay once), the earlier first
sighting — so importing the same artifact twice changes nothing, and two shards that each
replayed some of last night's failures leave every replay in the night's database.

Made local (`local=`): a run folder named by a record (the CI machine's path) is replaced
by the same run folder on this machine when one of `runs` holds it (e.g. a downloaded
`campaign-*` artifact), else left empty; the record's `source` keeps where it came from
and the path it had there.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lab.campaign.failures import Failure, FailureDB, Outcome
from lab.ground.errors import InputError

__all__ = ["ImportedRecord", "LocalRuns", "merge_records", "read_records"]


def _record(raw: Any, where: str) -> Failure:
    if not isinstance(raw, dict):
        raise InputError(f"{where}: not a failure record (a JSON object is expected)")
    try:
        return Failure.from_json(raw)
    except KeyError as exc:
        raise InputError(f"{where}: not a failure record: {exc} is missing") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"{where}: not a failure record: {exc}") from None


def _parse(text: bytes, where: str) -> Failure:
    try:
        raw = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{where}: not JSON: {exc}") from None
    return _record(raw, where)


def _from_zip(path: Path) -> list[tuple[Failure, str]]:
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise InputError(f"{path}: not a zip archive: {exc}") from None
    with archive:
        names = sorted(
            n for n in archive.namelist() if n.endswith(".json") and "/" not in n.strip("/")
        )
        return [(_parse(archive.read(n), f"{path}:{n}"), f"{path}:{n}") for n in names]


def _from_folder(path: Path) -> list[tuple[Failure, str]]:
    found = []
    for file in sorted(path.glob("*.json")):
        try:
            text = file.read_bytes()
        except OSError as exc:
            raise InputError(f"{file}: cannot be read: {exc.strerror or exc}") from None
        found.append((_parse(text, str(file)), str(file)))
    return found


def read_records(sources: Sequence[Path]) -> list[tuple[Failure, Path]]:
    """(record, the source it came from) for every record of every source."""
    records: list[tuple[Failure, Path]] = []
    for source in sources:
        if source.is_dir():
            found = _from_folder(source)
        elif source.is_file():
            found = _from_zip(source)
        else:
            raise InputError(f"{source}: no such folder or zip archive")
        if not found:
            raise InputError(
                f"{source}: no failure records in it (a `failures` artifact holds "
                "<scenario>-<id>.json files)"
            )
        records.extend((failure, source) for failure, _ in found)
    return records


class LocalRuns:
    """Run folders on this machine, found by their scenario and name under `roots`."""

    def __init__(self, roots: Sequence[Path]) -> None:
        self.roots = [r for r in roots]
        for root in self.roots:
            if not root.is_dir():
                raise InputError(f"--runs {root}: no such folder")
        self._found: dict[tuple[str, str], str] = {}
        for root in self.roots:
            for spec in sorted(root.rglob("spec.json")):
                folder = spec.parent
                self._found.setdefault((folder.parent.name, folder.name), str(folder.resolve()))

    def local(self, path: str) -> str:
        """The same run folder here ("" when there is none)."""
        if not path:
            return ""
        folder = Path(path)
        if (folder / "spec.json").is_file():
            return str(folder.resolve())
        return self._found.get((folder.parent.name, folder.name), "")


@dataclass(frozen=True)
class ImportedRecord:
    failure: Failure
    change: str  # "new", "joined" (outcomes added) or "unchanged"


def _key(outcome: Outcome) -> tuple[str, str, str, bool]:
    return (outcome.at, outcome.verdict, outcome.folder, outcome.reproduced)


def _joined(mine: Failure, theirs: Failure) -> Failure:
    """Both records' outcomes (each replay once, in time order), the earlier first sighting."""
    known = {_key(o) for o in mine.outcomes}
    added = [o for o in theirs.outcomes if _key(o) not in known]
    outcomes = sorted((*mine.outcomes, *added), key=lambda o: o.at)
    first = min(mine.first_seen, theirs.first_seen) if theirs.first_seen else mine.first_seen
    return replace(mine, outcomes=tuple(outcomes), first_seen=first or theirs.first_seen)


def _made_local(failure: Failure, came_from: Path, runs: LocalRuns) -> Failure:
    folder = runs.local(failure.folder)
    outcomes = tuple(replace(o, folder=runs.local(o.folder)) for o in failure.outcomes)
    source = f"{came_from.resolve()}"
    if failure.folder and not folder:
        source += f" (its run folder there: {failure.folder})"
    return replace(failure, folder=folder, outcomes=outcomes, source=source)


def merge_records(
    db: FailureDB, records: Sequence[tuple[Failure, Path]], local: LocalRuns | None = None
) -> list[ImportedRecord]:
    """Join every record into `db` (made local first, when `local` is given)."""
    changes: list[ImportedRecord] = []
    for failure, came_from in records:
        incoming = failure if local is None else _made_local(failure, came_from, local)
        known = db.find(incoming.scenario, incoming.id)
        if known is None:
            db.save(incoming)
            changes.append(ImportedRecord(incoming, "new"))
            continue
        joined = _joined(known, incoming)
        if joined == known:
            changes.append(ImportedRecord(known, "unchanged"))
            continue
        db.save(joined)
        changes.append(ImportedRecord(joined, "joined"))
    return changes
