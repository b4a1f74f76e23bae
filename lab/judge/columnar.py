"""The run folder's columnar copies: history.parquet and events.parquet beside the JSONL.

The JSONL files stay the source of truth; each copy holds the same rows with an explicit
schema (`HISTORY_SCHEMA`, `EVENTS_SCHEMA`) and records in its Parquet metadata
(`lab.columnar`) the copy's version and the size of the JSONL it was made from. A copy is
fresh while that size is the JSONL's size and the copy is not older than the JSONL; a
missing or stale copy is rebuilt from the JSONL when something asks for it
(`history_parquet`, `events_parquet`), written to a temporary name and renamed, so a reader
never sees half a copy. A torn last line is left out, as every reader of the JSONL does.

    write_columnar_copies(folder)   both copies, now (the runner calls it at the end of a run)
    history_parquet(path)           the history's copy, rebuilt when missing or stale
    fresh_history_parquet(path)     the history's copy if it is fresh, else None
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lab.ground.errors import InputError
from lab.judge.history_jsonl import (
    batch_problem,
    complete_length,
    jsonl_tables,
    locate_error,
    read_error,
)

__all__ = [
    "EVENTS_SCHEMA",
    "HISTORY_SCHEMA",
    "events_parquet",
    "fresh_history_parquet",
    "history_parquet",
    "parquet_batches",
    "write_columnar_copies",
]

VERSION = 1
ROW_GROUP = 1 << 20
_META_KEY = b"lab.columnar"

HISTORY_SCHEMA = pa.schema(
    [
        pa.field("index", pa.int64(), nullable=False),
        pa.field("time", pa.int64(), nullable=False),
        pa.field("process", pa.string(), nullable=False),
        pa.field("type", pa.string(), nullable=False),
        pa.field("f", pa.string(), nullable=False),
        ("value", pa.string()),
        ("node", pa.string()),
        ("seq", pa.int64()),
        ("redelivered", pa.bool_()),
        ("error", pa.string()),
    ]
)
"""history.parquet: history.jsonl's fields (docs/run-folder.md), required first, in file
order."""

EVENTS_SCHEMA = pa.schema(
    [
        ("v", pa.int32()),
        ("time", pa.int64()),
        ("kind", pa.string()),
        ("node", pa.string()),
        ("role", pa.string()),
        ("code", pa.string()),
        ("text", pa.string()),
        ("phase", pa.string()),
        ("raw", pa.string()),
    ]
)
"""events.parquet: events.jsonl's common fields (docs/run-folder.md), and each whole line as
`raw`."""

_DICTIONARY_COLUMNS = ["process", "type", "f", "node", "error", "kind", "role", "code", "phase"]
_DELTA_COLUMNS = {"index": "DELTA_BINARY_PACKED", "time": "DELTA_BINARY_PACKED"}


def write_columnar_copies(folder: Path) -> None:
    """Write history.parquet and events.parquet from the folder's JSONL files, now.

    A JSONL file that is absent is skipped. Raises `InputError` if history.jsonl breaks
    the history format (naming file and line) or a copy cannot be written.
    """
    if (folder / "history.jsonl").is_file():
        _write_history(folder / "history.jsonl", folder / "history.parquet")
    if (folder / "events.jsonl").is_file():
        _write_events(folder / "events.jsonl", folder / "events.parquet")


def history_parquet(path: Path) -> Path:
    """The Parquet copy of a history (a history.jsonl or a run folder), rebuilt first when
    it is missing or older than the JSONL. Raises `InputError` as `write_columnar_copies`."""
    source = path / "history.jsonl" if path.is_dir() else path
    copy = source.with_suffix(".parquet")
    if not _fresh(source, copy):
        _write_history(source, copy)
    return copy


def events_parquet(path: Path) -> Path:
    """The Parquet copy of a run folder's events.jsonl, rebuilt first when missing or stale."""
    source = path / "events.jsonl" if path.is_dir() else path
    copy = source.with_suffix(".parquet")
    if not _fresh(source, copy):
        _write_events(source, copy)
    return copy


def fresh_history_parquet(history: Path) -> Path | None:
    """history.parquet beside `history` (a history.jsonl) if it is fresh; never writes."""
    copy = history.with_suffix(".parquet")
    return copy if _fresh(history, copy) else None


def parquet_batches(path: Path, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """The copy's `columns`, a row group at a time; strings with few values come as
    dictionaries."""
    dictionary = [c for c in columns if c in _DICTIONARY_COLUMNS]
    with pq.ParquetFile(path, read_dictionary=dictionary) as parquet:
        yield from parquet.iter_batches(batch_size=ROW_GROUP, columns=list(columns))


def _fresh(source: Path, copy: Path) -> bool:
    try:
        source_stat, copy_stat = source.stat(), copy.stat()
        if copy_stat.st_mtime_ns < source_stat.st_mtime_ns:
            return False
        metadata = pq.read_schema(copy).metadata or {}
        recorded = json.loads(metadata[_META_KEY])
    except (OSError, KeyError, ValueError, pa.ArrowException):
        return False
    return bool(
        recorded.get("version") == VERSION and recorded.get("source_size") == source_stat.st_size
    )


def _metadata(source: Path, size: int) -> dict[bytes, bytes]:
    record = {"version": VERSION, "source": source.name, "source_size": size}
    return {_META_KEY: json.dumps(record).encode("utf-8")}


def _write_history(source: Path, copy: Path) -> None:
    try:
        size = source.stat().st_size
        length = complete_length(source)
    except OSError as error:
        raise read_error(source, error) from error
    schema = HISTORY_SCHEMA.with_metadata(_metadata(source, size))
    with _replacing(copy) as temporary:
        writer = pq.ParquetWriter(
            temporary,
            schema,
            compression="zstd",
            use_dictionary=_DICTIONARY_COLUMNS,
            column_encoding=_DELTA_COLUMNS,
        )
        with writer:
            pending: list[pa.Table] = []
            rows = 0
            for table in jsonl_tables(source, _without_metadata(schema), length=length):
                problem = batch_problem(table)
                if problem is not None:
                    raise locate_error(source, length, problem)
                pending.append(table)
                rows += table.num_rows
                if rows >= ROW_GROUP:
                    writer.write_table(_conform(pending, schema), row_group_size=ROW_GROUP)
                    pending, rows = [], 0
            if pending:
                writer.write_table(_conform(pending, schema), row_group_size=ROW_GROUP)


def _without_metadata(schema: pa.Schema) -> pa.Schema:
    """The schema the JSON reader parses with: every field nullable (checked afterwards)."""
    return pa.schema([pa.field(f.name, f.type) for f in schema])


def _conform(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    return pa.concat_tables(tables).cast(schema)


def _write_events(source: Path, copy: Path) -> None:
    try:
        size = source.stat().st_size
        lines = source.read_bytes().splitlines()
    except OSError as error:
        raise read_error(source, error) from error
    rows = [row for row in (_event_row(line) for line in lines) if row is not None]
    columns = {name: [row.get(name) for row in rows] for name in EVENTS_SCHEMA.names}
    table = pa.table(columns, schema=EVENTS_SCHEMA.with_metadata(_metadata(source, size)))
    with _replacing(copy) as temporary:
        pq.write_table(table, temporary, compression="zstd")


def _event_row(line: bytes) -> dict[str, Any] | None:
    """An event line's columns; None for a line that is not a JSON object (a torn tail)."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    row: dict[str, Any] = {"raw": line.decode("utf-8")}
    for name in ("v", "time"):
        number = event.get(name)
        limit = 2**31 if name == "v" else 2**63
        if isinstance(number, int) and not isinstance(number, bool) and -limit <= number < limit:
            row[name] = number
    for name in ("kind", "node", "role", "code", "text", "phase"):
        text = event.get(name)
        if isinstance(text, str):
            row[name] = text
    return row


class _replacing:
    """A temporary path beside `target` that replaces it on success and is removed on failure."""

    def __init__(self, target: Path) -> None:
        self._target = target
        self._temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")

    def __enter__(self) -> str:
        return str(self._temporary)

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is None:
            try:
                os.replace(self._temporary, self._target)
                return
            except OSError as failure:
                self._temporary.unlink(missing_ok=True)
                raise InputError(f"{self._target}: cannot write: {failure}") from failure
        self._temporary.unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise InputError(f"{self._target}: cannot write: {error}") from error
