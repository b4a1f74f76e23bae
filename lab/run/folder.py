"""The run folder of docs/run-folder.md, and its whole-line JSONL writers.

    runs/<scenario>/<UTC yyyymmddTHHMMSSZ>-<seed>/
      spec.json  schedule.jsonl  history.jsonl  events.jsonl  nodes/<node>/  result.json
    runs/<scenario>/latest -> the newest run folder

Every file is appended a whole line at a time, one write each, so a run killed half-way
still leaves readable JSONL; a write that fails (a full disk) is cut back off the file, so
it still ends at a line end, and is handed to the run's `WriteWatch`. A folder is never
rewritten: a name that exists already gets a numeric suffix.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.ground.errors import InputError, UsageError
from lab.ground.files import read_user_document, user_folder
from lab.run.disk import WriteWatch

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


class _Lines:
    """An append-only file of whole lines: each line one write; a write that fails is cut
    back off the file, so the file ends at a line end, and every later line is dropped.

    With a `WriteWatch` the failure is handed to it (the runner stops the run); without one
    it is raised."""

    def __init__(self, path: Path, watch: WriteWatch | None) -> None:
        self.path = path
        self._watch = watch
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._size = os.fstat(self._fd).st_size
        self.failed = False

    def append(self, data: bytes) -> bool:
        """Append one line (the caller holds its lock); False once the file stopped taking."""
        if self._fd is None or self.failed:
            return False
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as error:
            self.failed = True
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            if self._watch is None:
                raise
            self._watch.failed(self.path, error)
            return False
        self._size += len(data)
        return True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class JsonlWriter:
    """Appends one JSON object per line, one write each; safe from many threads. A write that
    fails goes to `watch` (or is raised without one) and the file keeps its whole lines."""

    def __init__(self, path: Path, watch: WriteWatch | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._lines = _Lines(path, watch)

    def write(self, obj: dict[str, Any]) -> None:
        line = (json.dumps(obj, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:
            self._lines.append(line)

    def close(self) -> None:
        with self._lock:
            self._lines.close()


class EventLog:
    """events.jsonl (docs/run-folder.md, events.jsonl)."""

    def __init__(self, path: Path, clock: RunClock, watch: WriteWatch | None = None) -> None:
        self._out = JsonlWriter(path, watch)
        self._clock = clock

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        self._out.write(
            {"v": EVENTS_VERSION, "time": self._clock.now(), "kind": kind, "node": node, **fields}
        )

    def close(self) -> None:
        self._out.close()


class HistoryRecorder:
    """history.jsonl (docs/run-folder.md): the single writer, which numbers operations.

    Workers send operations without `index`; `record` adds it in file order. A write that
    fails goes to `watch` (or is raised without one); the operations after it are dropped,
    and the file keeps its whole lines.
    """

    def __init__(self, path: Path, watch: WriteWatch | None = None) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._lines = _Lines(path, watch)
        self._next = 0
        self.acknowledged = 0
        self.received = 0
        self.processes: set[str] = set()
        """The client processes that recorded an operation."""

    def record(self, op: dict[str, Any]) -> None:
        with self._lock:
            line = json.dumps({"index": self._next, **op}, separators=(",", ":"))
            if not self._lines.append((line + "\n").encode("utf-8")):
                return
            self._next += 1
            self.processes.add(str(op.get("process")))
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
            self._lines.close()


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
        """A run folder given by a user; InputError when it is none (or cannot be read)."""
        user_folder(path, "run folder")
        folder = RunFolder(path.resolve() if path.is_symlink() else path)
        if not folder.spec.exists():
            raise InputError(f"{path}: not a run folder (no spec.json)")
        return folder

    def read_spec(self) -> dict[str, Any]:
        """spec.json as a user may have edited it: a JSON object, or one InputError line."""
        return read_user_document(self.spec, "run spec", kind="json")
