"""The queue checker: which messages a broker lost, invented, resurrected or repeated.

A history (formats.md section 2) is read as columns and sorted, by message id, into sets:

    attempted      ids with any `send` op
    acknowledged   ids with at least one `send ok`
    failed         ids with no `send ok`, no `send info`, no unfinished invoke and a `send fail`
    indeterminate  ids with no `send ok` and a `send info` or an invoke with no completion
    received       ids with at least one `receive ok`

An invoke with no completion counts as `info`: send invokes and completions are paired per
(process, id), and an id with more invokes than completions has an unfinished invoke.

From the sets come the verdict categories:

    lost           acknowledged - received         a violation
    unexpected     received - attempted            a violation
    resurrected    received & failed               a violation: refused, then delivered
    recovered      received & indeterminate        fine
    duplicated     ids received more than once     reported; `duplicate_deliveries` counts extras

`valid` is false if lost, unexpected or resurrected is non-empty. When the only violation
is lost and some consumer's drain did not end `ok` (or nobody drained), `valid` is
`"unknown"`: the messages may still sit in the queue.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from lab.ground.errors import InputError

__all__ = ["CheckResult", "IdSet", "check_path", "check_table", "read_history"]

MAX_IDS = 1000

_SCHEMA = pa.schema(
    [
        ("index", pa.int64()),
        ("time", pa.int64()),
        ("process", pa.string()),
        ("type", pa.string()),
        ("f", pa.string()),
        ("value", pa.string()),
    ]
)
_REQUIRED = ("index", "time", "process", "type", "f")
_INT_FIELDS = ("index", "time")
_TYPES = frozenset({"invoke", "ok", "fail", "info"})
_FUNCTIONS = frozenset({"send", "receive", "drain"})
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_BLOCK_SIZE = 16 << 20
_TAIL_CHUNK = 1 << 16


@dataclass(frozen=True)
class IdSet:
    """How many ids a category holds, and the first `MAX_IDS` of them, sorted."""

    count: int
    ids: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "ids": list(self.ids)}


@dataclass(frozen=True)
class CheckResult:
    """The checker's sets and verdict for one history."""

    valid: bool | Literal["unknown"]
    attempted: int
    acknowledged: int
    failed: int
    indeterminate: int
    received: int
    lost: IdSet
    unexpected: IdSet
    resurrected: IdSet
    recovered: IdSet
    duplicated: IdSet
    duplicate_deliveries: int

    def to_json(self) -> dict[str, Any]:
        """The `lab check --json` object of formats.md section 4, keys in its order."""
        return {
            "valid": self.valid,
            "attempted": self.attempted,
            "acknowledged": self.acknowledged,
            "failed": self.failed,
            "indeterminate": self.indeterminate,
            "received": self.received,
            "lost": self.lost.to_json(),
            "unexpected": self.unexpected.to_json(),
            "resurrected": self.resurrected.to_json(),
            "recovered": self.recovered.to_json(),
            "duplicated": self.duplicated.to_json(),
            "duplicate_deliveries": self.duplicate_deliveries,
        }


def check_path(path: Path) -> CheckResult:
    """Check a `history.jsonl`, or the one in a run directory."""
    history = path / "history.jsonl" if path.is_dir() else path
    return check_table(read_history(history))


def read_history(path: Path) -> pa.Table:
    """Read a history.jsonl as columns; a torn last line is ignored.

    Raises `InputError` naming the file (and the line, when one is to blame).
    """
    try:
        length = _complete_length(path)
        if length == 0:
            return _SCHEMA.empty_table()
        with pa.memory_map(str(path)) as source:
            table = _parse(path, source.read_buffer(length), length)
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror or error}") from error
    if not _columns_valid(table):
        raise _locate_error(path, length, "a field is missing or out of range")
    return table


def check_table(table: pa.Table) -> CheckResult:
    """Sort the ids of a history table into the sets of formats.md section 4."""
    f = table.column("f")
    kind = table.column("type")
    names, codes = _encode(table.column("value"))
    is_send = pc.equal(f, "send")
    sends = pa.table(
        {
            "process": table.column("process").filter(is_send),
            "type": kind.filter(is_send),
            "value": codes.filter(is_send),
        }
    )
    send_kind = sends.column("type")
    send_value = sends.column("value")

    attempted = _unique(send_value)
    acknowledged = _unique(send_value.filter(pc.equal(send_kind, "ok")))

    unsettled = sends.filter(pc.invert(pc.is_in(send_value, value_set=acknowledged)))
    unsettled_kind = unsettled.column("type")
    unsettled_value = unsettled.column("value")
    info = _unique(unsettled_value.filter(pc.equal(unsettled_kind, "info")))
    unfinished = _unfinished_invokes(unsettled)
    indeterminate = _unique(pa.chunked_array([info, unfinished], type=codes.type))
    refused = _unique(unsettled_value.filter(pc.equal(unsettled_kind, "fail")))
    failed = _without(refused, indeterminate)

    deliveries = codes.filter(pc.and_(pc.equal(f, "receive"), pc.equal(kind, "ok")))
    counts = pc.value_counts(_drop_null(deliveries))
    received = counts.field("values")
    repeats = counts.field("counts")
    duplicated = received.filter(pc.greater(repeats, 1))
    duplicate_deliveries = int(pc.sum(repeats).as_py() or 0) - len(received)

    lost = _without(acknowledged, received)
    unexpected = _without(received, attempted)
    resurrected = received.filter(pc.is_in(received, value_set=failed))
    recovered = received.filter(pc.is_in(received, value_set=indeterminate))

    return CheckResult(
        valid=_verdict(
            lost=len(lost),
            violations=len(unexpected) + len(resurrected),
            drained=_all_drained(table),
        ),
        attempted=len(attempted),
        acknowledged=len(acknowledged),
        failed=len(failed),
        indeterminate=len(indeterminate),
        received=len(received),
        lost=_id_set(names, lost),
        unexpected=_id_set(names, unexpected),
        resurrected=_id_set(names, resurrected),
        recovered=_id_set(names, recovered),
        duplicated=_id_set(names, duplicated),
        duplicate_deliveries=duplicate_deliveries,
    )


def _encode(values: pa.ChunkedArray) -> tuple[pa.Array, pa.Array]:
    """The distinct ids, and each row's id as an index into them (null where none)."""
    encoded = pc.dictionary_encode(values.combine_chunks())
    return encoded.dictionary, encoded.indices


def _parse(path: Path, data: pa.Buffer, length: int) -> pa.Table:
    try:
        table = pa_json.read_json(
            pa.BufferReader(data),
            read_options=pa_json.ReadOptions(block_size=_BLOCK_SIZE),
            parse_options=pa_json.ParseOptions(
                explicit_schema=_SCHEMA, unexpected_field_behavior="ignore"
            ),
        )
    except pa.ArrowInvalid as error:
        raise _locate_error(path, length, str(error)) from error
    return table.select(_SCHEMA.names)


def _verdict(*, lost: int, violations: int, drained: bool) -> bool | Literal["unknown"]:
    if violations:
        return False
    if lost:
        return False if drained else "unknown"
    return True


def _unfinished_invokes(sends: pa.Table) -> pa.Array:
    """Ids with more send invokes than completions for some (process, id) pair."""
    if sends.num_rows == 0:
        return pa.array([], type=sends.schema.field("value").type)
    flagged = pa.table(
        {
            "process": sends.column("process"),
            "value": sends.column("value"),
            "invokes": pc.cast(pc.equal(sends.column("type"), "invoke"), pa.int64()),
        }
    )
    pairs = flagged.group_by(["process", "value"]).aggregate(
        [("invokes", "sum"), ("invokes", "count")]
    )
    invokes = pairs.column("invokes_sum")
    completions = pc.subtract(pairs.column("invokes_count"), invokes)
    return _unique(pairs.column("value").filter(pc.greater(invokes, completions)))


def _all_drained(table: pa.Table) -> bool:
    """True if some drain ended ok and every process that drained ended its drain ok."""
    drains = table.filter(pc.equal(table.column("f"), "drain")).select(["process", "type"])
    if drains.num_rows == 0:
        return False
    last = drains.group_by(["process"], use_threads=False).aggregate([("type", "last")])
    return bool(pc.all(pc.equal(last.column("type_last"), "ok")).as_py())


def _unique(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    unique = pc.unique(values)
    if isinstance(unique, pa.ChunkedArray):
        unique = unique.combine_chunks()
    return _drop_null(unique)


def _drop_null(values: pa.Array | pa.ChunkedArray) -> Any:
    return pc.drop_null(values) if values.null_count else values


def _without(values: pa.Array, removed: pa.Array) -> pa.Array:
    return values.filter(pc.invert(pc.is_in(values, value_set=removed)))


def _id_set(names: pa.Array, codes: pa.Array) -> IdSet:
    ids = names.take(codes)
    first = ids
    if len(ids) > MAX_IDS:
        first = ids.take(pc.select_k_unstable(ids, k=MAX_IDS, sort_keys=[("ids", "ascending")]))
    ordered = first.take(pc.array_sort_indices(first))
    return IdSet(count=len(ids), ids=tuple(ordered.to_pylist()))


def _columns_valid(table: pa.Table) -> bool:
    if any(table.column(name).null_count for name in _REQUIRED):
        return False
    if not set(pc.unique(table.column("type")).to_pylist()) <= _TYPES:
        return False
    if not set(pc.unique(table.column("f")).to_pylist()) <= _FUNCTIONS:
        return False
    value = table.column("value")
    if value.null_count == 0:
        return True
    needs_value = pc.or_(
        pc.equal(table.column("f"), "send"),
        pc.and_(pc.equal(table.column("f"), "receive"), pc.equal(table.column("type"), "ok")),
    )
    return not pc.any(pc.and_(needs_value, pc.is_null(value))).as_py()


def _complete_length(path: Path) -> int:
    """The length of the file without a torn last line."""
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


def _locate_error(path: Path, length: int, detail: str) -> InputError:
    """Find the first bad line by a slow scan; only called once reading has failed."""
    with path.open("rb") as stream:
        for number, line in _numbered_lines(stream, length):
            problem = _line_problem(line)
            if problem is not None:
                return InputError(f"{path}:{number}: {problem}")
    return InputError(f"{path}: {detail}")


def _numbered_lines(stream: Any, length: int) -> Iterator[tuple[int, bytes]]:
    consumed = 0
    for number, line in enumerate(stream, start=1):
        if consumed >= length:
            return
        consumed += len(line)
        yield number, line


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
    for name in _REQUIRED:
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
    if record["type"] not in _TYPES:
        return f'field "type" must be one of {sorted(_TYPES)}, not "{record["type"]}"'
    if record["f"] not in _FUNCTIONS:
        return f'field "f" must be one of {sorted(_FUNCTIONS)}, not "{record["f"]}"'
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
