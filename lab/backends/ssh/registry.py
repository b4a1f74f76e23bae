"""Records of what a lab process made outside itself (a rig's namespaces, what a run put on
its hosts), each a small JSON file in a machine-wide folder, so that the next `lab` command
can undo what a lab killed with SIGKILL left.

A record names its owner by pid and start time (a pid used again by another process is never
taken for the owner); a record without an owner (`lab up`'s cluster) is only removed by the
command that owns it by name (`lab down`).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.ground.children import process_started
from lab.ground.files import write_json

__all__ = ["HOST_SESSIONS", "Record", "Registry"]


@dataclass(frozen=True)
class Record:
    path: Path
    body: dict[str, Any]

    @property
    def orphaned(self) -> bool:
        """Its owner is gone (a record with no owner never is)."""
        owner = self.body.get("owner")
        if not isinstance(owner, dict):
            return False
        return process_started(int(owner["pid"])) != owner.get("started")

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


class Registry:
    """The records of one kind (`rigs`, `hosts`), in `<tmp>/lab-<kind>/`."""

    def __init__(self, kind: str, folder: Path | None = None) -> None:
        self.folder = folder or Path(tempfile.gettempdir()) / f"lab-{kind}"

    def write(self, name: str, body: dict[str, Any], *, owned: bool = True) -> Record:
        """Write (or rewrite) record `name`, owned by this process unless `owned` is False."""
        self.folder.mkdir(parents=True, exist_ok=True)
        full = dict(body)
        if owned:
            pid = os.getpid()
            full["owner"] = {"pid": pid, "started": process_started(pid)}
        else:
            full.pop("owner", None)
        path = self.folder / f"{name}.json"
        write_json(path, full)
        return Record(path, full)

    def read(self, name: str) -> Record | None:
        path = self.folder / f"{name}.json"
        return _load(path)

    def records(self) -> Iterator[Record]:
        if not self.folder.is_dir():
            return
        for path in sorted(self.folder.glob("*.json")):
            record = _load(path)
            if record is not None:
                yield record


def _load(path: Path) -> Record | None:
    with contextlib.suppress(OSError, ValueError):
        body = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(body, dict):
            return Record(path, body)
    return None


HOST_SESSIONS = Registry("hosts")
"""What each run put on its hosts (lab.backends.ssh.session); read here, without AsyncSSH, so
that the leftover reaper can tell whether any host needs cleaning before it loads the SSH side."""
