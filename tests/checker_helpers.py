"""Shared by the checker tests: hand-written histories of (process, type, f, value) ops."""

from __future__ import annotations

import json
from pathlib import Path

from lab.judge.checker import CheckResult, check_path

Op = tuple[str, str, str, str | None]


def write_history(directory: Path, ops: list[Op], *, tail: str = "") -> Path:
    """Write ops as (process, type, f, value) lines, then `tail` verbatim."""
    path = directory / "history.jsonl"
    lines = [
        json.dumps(
            {"index": i, "time": 10 * i, "process": p, "type": t, "f": f, "value": v, "node": "n1"}
        )
        for i, (p, t, f, v) in enumerate(ops)
    ]
    path.write_text("".join(line + "\n" for line in lines) + tail, encoding="utf-8")
    return path


def sent(value: str, process: str = "p0") -> list[Op]:
    return [(process, "invoke", "send", value), (process, "ok", "send", value)]


def got(value: str, process: str = "c0") -> list[Op]:
    return [(process, "ok", "receive", value)]


def drained(*processes: str, end: str = "ok") -> list[Op]:
    ops: list[Op] = []
    for process in processes:
        ops += [(process, "invoke", "drain", None), (process, end, "drain", None)]
    return ops


def check(tmp_path: Path, ops: list[Op], *, tail: str = "") -> CheckResult:
    return check_path(write_history(tmp_path, ops, tail=tail))
