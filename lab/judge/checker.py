"""The queue checker: which messages a broker lost, invented, resurrected or repeated.

A history (docs/run-folder.md, history.jsonl) is sorted, by message id, into sets:

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

The checker streams: it reads the history a batch at a time, from the run folder's fresh
history.parquet when there is one (`columnar`) and from history.jsonl otherwise, and keeps
only a few bits and counters per distinct message (`tally`, `message_ids`).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lab.ground.errors import InputError
from lab.judge.check_result import CheckResult, IdSet
from lab.judge.columnar import fresh_history_parquet, parquet_batches
from lab.judge.history_jsonl import (
    CHECKED,
    batch_problem,
    complete_length,
    jsonl_tables,
    locate_error,
    read_error,
)
from lab.judge.tally import QueueTally

__all__ = ["CheckResult", "IdSet", "check_path", "check_table", "read_history"]

_PARQUET_COLUMNS = ("process", "type", "f", "value")


def check_path(path: Path) -> CheckResult:
    """Check a `history.jsonl`, or the one in a run directory.

    Raises `InputError` naming the file (and the line) when the history cannot be read.
    """
    history = path / "history.jsonl" if path.is_dir() else path
    copy = fresh_history_parquet(history)
    if copy is not None:
        result = _check_parquet(copy)
        if result is not None:
            return result
    return _check_jsonl(history)


def read_history(path: Path) -> pa.Table:
    """Read a whole history.jsonl as columns (`CHECKED`); a torn last line is ignored.

    Raises `InputError` naming the file (and the line, when one is to blame).
    """
    length = _length(path)
    tables = list(jsonl_tables(path, CHECKED, length=length))
    for table in tables:
        problem = batch_problem(table)
        if problem is not None:
            raise locate_error(path, length, problem)
    return pa.concat_tables(tables) if tables else CHECKED.empty_table()


def check_table(table: pa.Table) -> CheckResult:
    """Sort the ids of a history table (`CHECKED` columns) into the sets of docs/run-folder.md."""
    tally = QueueTally()
    for batch in table.to_batches():
        problem = tally.add(batch)
        if problem is not None:
            raise InputError(f"history table: {problem}")
    return tally.result()


def _length(path: Path) -> int:
    try:
        return complete_length(path)
    except OSError as error:
        raise read_error(path, error) from error


def _check_jsonl(history: Path) -> CheckResult:
    length = _length(history)
    tally = QueueTally()
    for table in jsonl_tables(history, CHECKED, length=length):
        for batch in table.to_batches():
            problem = tally.add(batch)
            if problem is not None:
                raise locate_error(history, length, problem)
    return tally.result()


def _check_parquet(copy: Path) -> CheckResult | None:
    """The result from the columnar copy; None if the copy cannot be used after all."""
    tally = QueueTally()
    try:
        for batch in parquet_batches(copy, _PARQUET_COLUMNS):
            if tally.add(batch) is not None:
                return None
    except (OSError, pa.ArrowException):
        return None
    return tally.result()
