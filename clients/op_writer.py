"""A worker's stdout: one operation per line (docs/run-folder.md, history.jsonl, without `index`).

`RunnerGone` (stdout is closed) is the only exception a worker raises on purpose; a broker
misbehaving is recorded as operations, never raised.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Literal, TextIO

__all__ = ["LinkRole", "OpF", "OpType", "OpWriter", "RunnerGone", "split_lines"]

OpType = Literal["invoke", "ok", "fail", "info"]
OpF = Literal["send", "receive", "drain"]
LinkRole = Literal["sender", "receiver"]


class RunnerGone(Exception):
    """stdout was closed: nobody records the worker's operations any more."""


class OpWriter:
    """Writes operations as JSON lines, one flushed write each. Field order: time, process,
    type, f, value, then node, seq, redelivered, error when given."""

    def __init__(
        self,
        process: str,
        run_start_ns: int,
        stream: TextIO,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._head = ', "process": ' + encode_basestring(process) + ', "type": "'
        self._start = run_start_ns
        self._stream = stream
        self._clock = clock

    def write(
        self,
        type_: OpType,
        f: OpF,
        value: str | None,
        *,
        node: str | None = None,
        seq: int | None = None,
        redelivered: bool | None = None,
        error: str | None = None,
    ) -> None:
        line = (
            '{"time": '
            + str(self._clock() - self._start)
            + self._head
            + type_
            + '", "f": "'
            + f
            + '", "value": '
            + ("null" if value is None else encode_basestring(value))
        )
        if node is not None:
            line += ', "node": ' + encode_basestring(node)
        if seq is not None:
            line += ', "seq": ' + str(seq)
        if redelivered is not None:
            line += ', "redelivered": ' + ("true" if redelivered else "false")
        if error is not None:
            line += ', "error": ' + encode_basestring(error)
        try:
            self._stream.write(line + "}\n")
            self._stream.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise RunnerGone(str(exc)) from exc


def split_lines(buffer: bytes) -> tuple[list[str], bytes]:
    """The complete, non-blank lines in `buffer` (stripped), and the incomplete rest."""
    *complete, rest = buffer.split(b"\n")
    lines = [text for raw in complete if (text := raw.decode("utf-8", "replace").strip())]
    return lines, rest
