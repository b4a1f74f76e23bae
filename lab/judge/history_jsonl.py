"""Reading a history.jsonl (docs/run-folder.md) in batches, and naming its first bad line.

`jsonl_tables` cuts the file at line ends into chunks of about `CHUNK_BYTES` and parses them
with pyarrow's JSON reader on a small thread pool, handing the tables back in file order;
at most `_IN_FLIGHT` chunks are held at a time, so memory does not grow with the file. A
torn last line is left out (`complete_length`). When pyarrow refuses a chunk, or a batch
breaks a rule of the format (`batch_problem`), `locate_error` scans the file from the top
with Python's json module for the first bad line and names it: `file:line: what`.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from lab.ground.errors import InputError

__all__ = [
    "CHECKED",
    "CHUNK_BYTES",
    "FUNCTIONS",
    "REQUIRED",
    "TYPES",
    "batch_problem",
    "complete_length",
    "jsonl_tables",
    "locate_error",
    "read_error",
]

CHECKED = pa.schema(
    [
        ("index", pa.int64()),
        ("time", pa.int64()),
        ("process", pa.string()),
        ("type", pa.string()),
        ("f", pa.string()),
        ("value", pa.string()),
    ]
)
"""The fields the checker reads: the required ones and `value`."""

REQUIRED = ("index", "time", "process", "type", "f")
TYPES = frozenset({"invoke", "ok", "fail", "info"})
FUNCTIONS = frozenset({"send", "receive", "drain"})
CHUNK_BYTES = 16 << 20
_IN_FLIGHT = 3
_WORKERS = 2
_INT_FIELDS = ("index", "time")
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_TAIL_CHUNK = 1 << 16


def complete_length(path: Path) -> int:
    """The length of the file without a torn last line (raises OSError if unreadable)."""
    with path.open("rb") as stream:
        size = stream.seek(0, 2)
        if size == 0:
            return 0
        stream.seek(size - 1)
        if stream.read(1) == b"\n":
            return size
        start = size
        tail = b""
        while start > 0:
            start = max(0, start - _TAIL_CHUNK)
            stream.seek(start)
            tail = stream.read(size - start)
            cut = tail.rfind(b"\n")
            if cut >= 0:
                start += cut + 1
                tail = tail[cut + 1 :]
                break
    try:
        json.loads(tail)
    except ValueError:
        return start
    return size


def read_error(path: Path, error: OSError) -> InputError:
    return InputError(f"{path}: cannot read: {error.strerror or error}")


def jsonl_tables(
    path: Path,
    schema: pa.Schema,
    *,
    length: int | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> Iterator[pa.Table]:
    """The complete lines of `path` (its first `length` bytes) as tables of `schema`, in order.

    Raises `InputError` naming the file (and the first bad line when pyarrow refuses one).
    """
    if length is None:
        try:
            length = complete_length(path)
        except OSError as error:
            raise read_error(path, error) from error
    if length == 0:
        return
    pending: deque[Future[pa.Table]] = deque()
    with ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="jsonl") as pool:
        try:
            for chunk in _chunks(path, length, chunk_bytes):
                pending.append(pool.submit(_parse, chunk, schema))
                if len(pending) >= _IN_FLIGHT:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except pa.ArrowInvalid as error:
            raise locate_error(path, length, str(error)) from error
        except OSError as error:
            raise read_error(path, error) from error
        finally:
            for future in pending:
                future.cancel()


def _chunks(path: Path, length: int, chunk_bytes: int) -> Iterator[bytes]:
    """The first `length` bytes of `path` in pieces that end at a line end."""
    remaining = length
    carry = b""
    with path.open("rb") as stream:
        while remaining > 0:
            block = stream.read(min(chunk_bytes, remaining))
            if not block:
                break
            remaining -= len(block)
            data = carry + block if carry else block
            cut = len(data) if remaining <= 0 else data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            carry = data[cut:]
            if data[:cut].strip():
                yield data[:cut] if cut < len(data) else data
    if carry.strip():
        yield carry


def _parse(chunk: bytes, schema: pa.Schema) -> pa.Table:
    table = pa_json.read_json(
        pa.BufferReader(chunk),
        read_options=pa_json.ReadOptions(use_threads=False, block_size=max(len(chunk), 1 << 20)),
        parse_options=pa_json.ParseOptions(
            explicit_schema=schema, unexpected_field_behavior="ignore"
        ),
    )
    return table.select(schema.names)


def batch_problem(table: pa.Table | pa.RecordBatch) -> str | None:
    """What breaks the format in a parsed batch of `CHECKED` columns, or None."""
    problem = "a field is missing or out of range"
    if any(table.column(name).null_count for name in REQUIRED):
        return problem
    kind, function = table.column("type"), table.column("f")
    if not set(pc.unique(kind).to_pylist()) <= TYPES:
        return problem
    if not set(pc.unique(function).to_pylist()) <= FUNCTIONS:
        return problem
    value = table.column("value")
    if value.null_count == 0:
        return None
    needs_value = pc.or_(
        pc.equal(function, "send"),
        pc.and_(pc.equal(function, "receive"), pc.equal(kind, "ok")),
    )
    return problem if pc.any(pc.and_(needs_value, pc.is_null(value))).as_py() else None


def locate_error(path: Path, length: int, detail: str) -> InputError:
    """Find the first bad line by a slow scan; only called once reading has failed."""
    try:
        with path.open("rb") as stream:
            consumed = 0
            for number, line in enumerate(stream, start=1):
                if consumed >= length:
                    break
                consumed += len(line)
                problem = _line_problem(line)
                if problem is not None:
                    return InputError(f"{path}:{number}: {problem}")
    except OSError as error:
        return read_error(path, error)
    return InputError(f"{path}: {detail}")


def _line_problem(line: bytes) -> str | None:
    if not line.strip():
        return None
    try:
        record = json.loads(line, object_pairs_hook=_unique_keys)
    except _DuplicateKeyError as error:
        return str(error)
    except json.JSONDecodeError as error:
        return f"not a JSON object: {error.msg} at column {error.colno}"
    except ValueError as error:
        return f"not a JSON object: {error}"
    if not isinstance(record, dict):
        return "not a JSON object"
    for name in REQUIRED:
        if record.get(name) is None:
            return f'missing required field "{name}"'
    for name in _INT_FIELDS:
        number = record[name]
        if isinstance(number, bool) or not isinstance(number, int):
            return f'field "{name}" must be an integer, not {_json_type(number)}'
        if not _INT64_MIN <= number <= _INT64_MAX:
            return f'field "{name}" is out of range: {number}'
    for name in ("process", "type", "f"):
        if not isinstance(record[name], str):
            return f'field "{name}" must be a string, not {_json_type(record[name])}'
    if record["type"] not in TYPES:
        return f'field "type" must be one of {sorted(TYPES)}, not "{record["type"]}"'
    if record["f"] not in FUNCTIONS:
        return f'field "f" must be one of {sorted(FUNCTIONS)}, not "{record["f"]}"'
    value = record.get("value")
    if value is None:
        if record["f"] == "send" or (record["f"] == "receive" and record["type"] == "ok"):
            return f'missing required field "value" on a {record["f"]} {record["type"]}'
    elif not isinstance(value, str):
        return f'field "value" must be a string or null, not {_json_type(value)}'
    return None


class _DuplicateKeyError(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for key, item in pairs:
        if key in record:
            raise _DuplicateKeyError(f'field "{key}" appears twice')
        record[key] = item
    return record


def _json_type(value: object) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "null"
