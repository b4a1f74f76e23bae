"""The run folder of docs/run-folder.md, and its line-buffered JSONL writers.

    runs/<scenario>/<UTC yyyymmddTHHMMSSZ>-<seed>/
      spec.json  schedule.jsonl  history.jsonl  events.jsonl  nodes/<node>/  result.json
    runs/<scenario>/latest -> the newest run folder

Every file is appended line by line and flushed, so a run killed half-way
still leaves readable JSONL. A folder is never rewritten: a name that exists
already gets a numeric suffix.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from lab.ground.errors import InputError, UsageError

__all__ = ["EventLog", "HistoryRecorder", "JsonlWriter", "RunClock", "RunFolder"]

EVENTS_VERSION = 1


class RunClock:
    """Nanoseconds since the run started, from the system-wide monotonic clock.

    Worker processes get `start_ns` and compute the same clock themselves.
    """

    def __init__(self, start_ns: int | None = None) -> None:
        self.start_ns = time.monotonic_ns() if start_ns is None else start_ns

    def now(self) -> int:
        return time.monotonic_ns() - self.start_ns


class JsonlWriter:
    """Appends one JSON object per line, flushed per line; safe from many threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._file: IO[str] = path.open("a", buffering=1, encoding="utf-8")

    def write(self, obj: dict[str, Any]) -> None:
        line = json.dumps(obj, separators=(",", ":")) + "\n"
        with self._lock:
            if not self._file.closed:
                self._file.write(line)

    def close(self) -> None:
        with self._lock:
            self._file.close()


class EventLog:
    """events.jsonl (docs/run-folder.md, events.jsonl)."""

    def __init__(self, path: Path, clock: RunClock) -> None:
        self._out = JsonlWriter(path)
        self._clock = clock

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        self._out.write(
            {"v": EVENTS_VERSION, "time": self._clock.now(), "kind": kind, "node": node, **fields}
        )

    def close(self) -> None:
        self._out.close()


class HistoryRecorder:
    """history.jsonl (docs/run-folder.md): the single writer, which numbers operations.

    Workers send operations without `index`; `record` adds it in file order.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._file: IO[str] = path.open("a", buffering=1, encoding="utf-8")
        self._next = 0
        self.acknowledged = 0
        self.received = 0

    def record(self, op: dict[str, Any]) -> None:
        with self._lock:
            if self._file.closed:
                return
            line = json.dumps({"index": self._next, **op}, separators=(",", ":"))
            self._file.write(line + "\n")
            self._next += 1
            if op.get("type") == "ok":
                if op.get("f") == "send":
                    self.acknowledged += 1
                elif op.get("f") == "receive":
                    self.received += 1

    @property
    def count(self) -> int:
        return self._next

    def close(self) -> None:
        with self._lock:
            self._file.close()


@dataclass(frozen=True)
class RunFolder:
    path: Path

    @property
    def spec(self) -> Path:
        return self.path / "spec.json"

    @property
    def schedule(self) -> Path:
        return self.path / "schedule.jsonl"

    @property
    def history(self) -> Path:
        return self.path / "history.jsonl"

    @property
    def events(self) -> Path:
        return self.path / "events.jsonl"

    @property
    def result(self) -> Path:
        return self.path / "result.json"

    def node_dir(self, node: str) -> Path:
        d = self.path / "nodes" / node
        d.mkdir(parents=True, exist_ok=True)
        return d

    @staticmethod
    def create(runs_dir: Path, scenario: str, seed: int) -> RunFolder:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        parent = runs_dir / scenario
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create runs directory {parent}: {exc.strerror}") from exc
        base = f"{stamp}-{seed}"
        for attempt in range(1000):
            name = base if attempt == 0 else f"{base}.{attempt}"
            try:
                (parent / name).mkdir()
            except FileExistsError:
                continue
            folder = RunFolder(parent / name)
            folder._point_latest()
            return folder
        raise UsageError(f"too many runs named {base} in {parent}")

    def _point_latest(self) -> None:
        link = self.path.parent / "latest"
        tmp = self.path.parent / f".latest.{os.getpid()}"
        try:
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(self.path.name)
            os.replace(tmp, link)
        except OSError:
            tmp.unlink(missing_ok=True)

    @staticmethod
    def open_existing(path: Path) -> RunFolder:
        folder = RunFolder(path.resolve() if path.is_symlink() else path)
        if not folder.spec.is_file():
            raise InputError(f"{path}: not a run folder (no spec.json)")
        return folder

    def read_spec(self) -> dict[str, Any]:
        try:
            raw = json.loads(self.spec.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"{self.spec}: cannot read the run spec: {exc}") from exc
        if not isinstance(raw, dict):
            raise InputError(f"{self.spec}:1: the run spec must be a JSON object")
        return raw
