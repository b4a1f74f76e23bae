"""The compacted store's manifest: which run folders it holds, by run id, folder and content.

    STORE/manifest/<UTC yyyymmddTHHMMSSffffffZ>-<batch>.parquet   one file per compaction

One row per run folder a compaction took in (`Entry`): its run id, its folder, a content
hash (BLAKE2b-256 over spec.json, result.json, history.jsonl and events.jsonl, names and
bytes) and a signature (the four files' sizes and modification times), the batch that holds
its rows in the store and when. A run's latest entry is the one that counts, and its batch
is the only one whose rows readers take; a manifest file is written last, under a temporary
name then renamed, so it is the commit of its batch.

A folder is *seen* when the manifest's entry for its run id has the same signature (a few
`stat` calls), or, if the signature changed (a copied folder), the same content hash: then a
new entry records the new signature against the batch already stored, and nothing is
compacted again. Only unseen folders are read and compacted.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import uuid
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_reports.run_folders import RUN_FILES

__all__ = [
    "Commits",
    "Entry",
    "commits",
    "committed_rows",
    "content_hash",
    "manifest_entries",
    "read_manifest",
    "run_id_of",
    "signature",
    "split_seen",
    "write_manifest",
]

_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("folder", pa.string()),
        ("content_hash", pa.string()),
        ("signature", pa.string()),
        ("batch", pa.string()),
        ("compacted_at", pa.string()),
    ]
)
_HASH_BLOCK = 1 << 20


@dataclass(frozen=True)
class Entry:
    """One run folder as a compaction took it in."""

    run_id: str
    folder: str
    content_hash: str
    signature: str
    batch: str
    compacted_at: str


def run_id_of(folder: Path) -> str:
    """`<scenario>/<folder>`, as `run_folders.read_run` names a run."""
    return f"{folder.parent.name}/{folder.name}"


def signature(folder: Path) -> str:
    """Size and modification time (ns) of each run file, `-` for one that is absent."""
    parts = []
    for name in RUN_FILES:
        try:
            stat = os.stat(folder / name)
        except FileNotFoundError:
            parts.append("-")
            continue
        parts.append(f"{stat.st_size}:{stat.st_mtime_ns}")
    return " ".join(parts)


def content_hash(folder: Path) -> str:
    """BLAKE2b-256 of the run files' names and bytes (an absent file counts as absent)."""
    digest = hashlib.blake2b(digest_size=32)
    for name in RUN_FILES:
        path = folder / name
        digest.update(name.encode("utf-8") + b"\0")
        try:
            with path.open("rb") as stream:
                digest.update(b"present\0")
                while block := stream.read(_HASH_BLOCK):
                    digest.update(block)
        except FileNotFoundError:
            digest.update(b"absent\0")
    return digest.hexdigest()


def manifest_entries(store: Path) -> list[Entry]:
    """Every entry of STORE's manifest, oldest first (empty without one)."""
    folder = store / "manifest"
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    return [  # names sort by time
        Entry(**row) for path in files for row in pq.read_table(path, schema=_SCHEMA).to_pylist()
    ]


def read_manifest(store: Path) -> dict[str, Entry]:
    """The latest entry of every run id in STORE's manifest (empty without one)."""
    return {entry.run_id: entry for entry in manifest_entries(store)}


@dataclass(frozen=True)
class Commits:
    """Which stored rows count: whole batches (every run of theirs still points to them),
    and runs of the other batches one by one."""

    whole: tuple[str, ...]
    partial: tuple[tuple[str, tuple[str, ...]], ...]

    def whole_rows(self) -> Column:
        """True for a row of a whole batch (`batch IN (…)`: cheap on millions of rows)."""
        return F.col("batch").isin(list(self.whole)) if self.whole else F.lit(False)

    def partial_rows(self) -> Column:
        """True for a row of a run that counts in a batch that is not whole."""
        condition = F.lit(False)
        for batch, run_ids in self.partial:
            condition = condition | (
                (F.col("batch") == batch) & F.col("run_id").isin(list(run_ids))
            )
        return condition

    def rows(self) -> Column:
        """True for every row that counts."""
        return self.whole_rows() | self.partial_rows() if self.partial else self.whole_rows()


def commits(store: Path, exclude: Collection[str] = ()) -> Commits | None:
    """What counts in STORE: each run's latest batch, without the runs in `exclude`; None
    for a store without a manifest."""
    entries = manifest_entries(store)
    if not entries:
        return None
    latest = {entry.run_id: entry.batch for entry in entries}
    written: defaultdict[str, set[str]] = defaultdict(set)
    for entry in entries:
        written[entry.batch].add(entry.run_id)
    current: defaultdict[str, set[str]] = defaultdict(set)
    for run_id, batch in latest.items():
        current[batch].add(run_id)
    excluded = set(exclude)
    whole = sorted(b for b, ids in current.items() if ids == written[b] and not ids & excluded)
    partial = tuple(
        (batch, tuple(sorted(ids - excluded)))
        for batch, ids in sorted(current.items())
        if batch not in whole and ids - excluded
    )
    return Commits(whole=tuple(whole), partial=partial)


def committed_rows(store: Path, exclude: Collection[str] = ()) -> Column | None:
    """A filter for the store's rows (by `run_id`, `batch`) that count (`commits`)."""
    found = commits(store, exclude)
    return None if found is None else found.rows()


def write_manifest(store: Path, entries: Sequence[Entry]) -> Path | None:
    """Commit `entries` as one new manifest file; None when there is nothing to write."""
    if not entries:
        return None
    folder = store / "manifest"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    path = folder / f"{stamp}-{entries[0].batch}.parquet"
    temporary = folder / f".{path.name}.{uuid.uuid4().hex[:8]}.tmp"
    table = pa.Table.from_pylist([asdict(e) for e in entries], schema=_SCHEMA)
    try:
        pq.write_table(table, temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


@dataclass(frozen=True)
class Split:
    """Run folders sorted by what the manifest knows of them."""

    seen: tuple[Path, ...]
    unseen: tuple[Path, ...]
    renewed: tuple[Entry, ...]
    """Entries for seen folders whose signature changed (same content): to write."""


def split_seen(
    folders: Iterable[Path], manifest: dict[str, Entry], *, now: str | None = None
) -> Split:
    """Which folders the store holds as they are now; hashes only where signatures differ."""
    seen: list[Path] = []
    unseen: list[Path] = []
    doubtful: list[tuple[Path, Entry, str]] = []
    for folder in folders:
        entry = manifest.get(run_id_of(folder))
        if entry is None:
            unseen.append(folder)
            continue
        current = signature(folder)
        if current == entry.signature:
            seen.append(folder)
        else:
            doubtful.append((folder, entry, current))
    renewed: list[Entry] = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        hashes = list(pool.map(content_hash, [folder for folder, _, _ in doubtful]))
    when = now or dt.datetime.now(dt.UTC).isoformat()
    for (folder, entry, current), digest in zip(doubtful, hashes, strict=True):
        if digest != entry.content_hash:
            unseen.append(folder)
            continue
        seen.append(folder)
        renewed.append(
            Entry(
                run_id=entry.run_id,
                folder=str(folder),
                content_hash=digest,
                signature=current,
                batch=entry.batch,
                compacted_at=when,
            )
        )
    return Split(seen=tuple(seen), unseen=tuple(unseen), renewed=tuple(renewed))
