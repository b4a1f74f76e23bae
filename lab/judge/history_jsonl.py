"""Reading a history.jsonl (docs/run-folder.md) in batches, and naming its first bad line.

`jsonl_tables` cuts the file at line ends into chunks of about `CHUNK_BYTES`, each read once
and handed on without a copy, and parses them with pyarrow's JSON reader on a small thread
pool, handing the tables back in file order; at most `_IN_FLIGHT` chunks are held at a time,
so memory does not grow with the file, and no line longer than `LINE_LIMIT` is read whole.
A torn last line is left out (`complete_length`); anything else after the last newline is
an error. Each chunk must be UTF-8 text (pyarrow takes any byte inside a string). When
pyarrow refuses a chunk, or a batch breaks a rule of the format (`batch_problem`),
`locate_error` scans the file from the top with Python's json module for the first bad line
and names it: `file:line: what`.
"""

from __future__ import annotations

import codecs
import json
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from lab.ground.errors import InputError
from lab.ground.files import LINE_LIMIT, first_text_problem, text_problem

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
_READ_BLOCK = 1 << 20


def complete_length(path: Path) -> int:
    """The length of the file without a torn last line (raises OSError if unreadable).

    A torn line is what a writer killed half-way leaves: text that begins a JSON object.
    Anything else after the last newline (binary data, text that is no JSON, a line longer
    than `LINE_LIMIT`) is an `InputError` naming the file and the line; only the file's
    last `LINE_LIMIT` bytes are read to tell."""
    with path.open("rb") as stream:
        size = stream.seek(0, 2)
        if size == 0:
            return 0
        start = max(0, size - LINE_LIMIT - 1)
        stream.seek(start)
        tail = stream.read(size - start)
    if tail.endswith(b"\n"):
        return size
    cut = tail.rfind(b"\n")
    if cut < 0 and start > 0:
        raise _first_of(path, start, f"a line longer than {LINE_LIMIT >> 20} MiB")
    begins = start + cut + 1
    tail = tail[cut + 1 :]
    try:
        json.loads(tail)
    except ValueError:
        problem = _torn_problem(tail)
        if problem is not None:
            raise _first_of(path, begins, problem) from None
        return begins
    return size


def _first_of(path: Path, tail_at: int, problem: str) -> InputError:
    """The error for what follows the last newline, unless the file's first bytes are
    already not text (a binary file is named by its first bad line, not its last)."""
    with path.open("rb") as stream:
        head = stream.read(min(tail_at, _READ_BLOCK))
    found = first_text_problem(head)
    if found is not None:
        line, what = found
        return InputError(f"{path}:{line}: {what}")
    return InputError(f"{path}:{_line_number(path, tail_at)}: {problem}")


def _torn_problem(tail: bytes) -> str | None:
    """Why text after the last newline is not the start of a line a writer was killed in."""
    found = text_problem(tail)
    if found is not None:
        offset, what = found
        if not (what.startswith("not UTF-8") and _cut_character(tail[offset:])):
            return f"{what} at column {offset + 1})"
    if tail.strip() and not tail.lstrip().startswith(b"{"):
        return "not a JSON object"
    return None


def _cut_character(rest: bytes) -> bool:
    """Whether `rest` is the beginning of one UTF-8 character, cut off by the file's end."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(rest, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _line_number(path: Path, offset: int) -> int:
    """The number of the line that holds byte `offset` (counted by reading up to it)."""
    lines = 1
    with path.open("rb") as stream:
        while offset > 0:
            block = stream.read(min(_READ_BLOCK, offset))
            if not block:
                break
            lines += block.count(b"\n")
            offset -= len(block)
    return lines


def _long_line(path: Path, offset: int) -> InputError:
    limit = f"{LINE_LIMIT >> 20} MiB"
    return InputError(f"{path}:{_line_number(path, offset)}: a line longer than {limit}")


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

    Raises `InputError` naming the file (and the first bad line when pyarrow refuses one,
    or a chunk is not UTF-8 text).
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
        except (pa.ArrowInvalid, UnicodeDecodeError) as error:
            raise locate_error(path, length, str(error)) from error
        except OSError as error:
            raise read_error(path, error) from error
        finally:
            for future in pending:
                future.cancel()


def _chunks(path: Path, length: int, chunk_bytes: int) -> Iterator[memoryview]:
    """The first `length` bytes of `path` in pieces that end at a line end, each read once
    and handed on without a copy: the part of a line a piece cut off is read again, as the
    beginning of the next piece."""
    position = 0
    with path.open("rb", buffering=0) as stream:
        descriptor = stream.fileno()
        while position < length:
            block = os.pread(descriptor, min(chunk_bytes, length - position), position)
            if not block:
                return
            end = len(block)
            if position + end < length:
                end = block.rfind(b"\n") + 1
                if end == 0:  # one line longer than a piece: read on to its end
                    block = _whole_line(path, descriptor, position, length, len(block))
                    end = len(block)
            yield memoryview(block)[:end]
            position += end


def _whole_line(path: Path, descriptor: int, position: int, length: int, read: int) -> bytes:
    """The bytes from `position` to the end of its line, if the line is within `LINE_LIMIT`."""
    limit = min(length - position, LINE_LIMIT + 1)
    block = os.pread(descriptor, limit, position)
    end = block.find(b"\n", read - 1) + 1
    if end == 0 and len(block) < length - position:
        raise _long_line(path, position)
    return block[:end] if end else block


def _parse(chunk: memoryview, schema: pa.Schema) -> pa.Table:
    # The JSON reader takes any byte in a string: the text is checked first.
    codecs.utf_8_decode(chunk, "strict", True)
    table = pa_json.read_json(
        pa.BufferReader(pa.py_buffer(chunk)),
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
            number = 0
            while consumed < length:
                line = stream.readline(LINE_LIMIT + 1)
                if not line:
                    break
                number += 1
                if len(line) > LINE_LIMIT and not line.endswith(b"\n"):
                    return _long_line(path, consumed)
                consumed += len(line)
                problem = _line_problem(line)
                if problem is not None:
                    return InputError(f"{path}:{number}: {problem}")
    except OSError as error:
        return read_error(path, error)
    return InputError(f"{path}: {detail}")


def _line_problem(line: bytes) -> str | None:
    found = first_text_problem(line)
    if found is not None:
        return found[1]
    if not line.strip():
        return None
    try:
        record = json.loads(line.decode("utf-8"), object_pairs_hook=_unique_keys)
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
