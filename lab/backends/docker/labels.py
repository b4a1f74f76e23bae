"""The labels on everything a run creates (containers, networks, volumes), and its owner.

    lab.run          the run's id; every resource of a run carries it
    lab.role         node, toxiproxy or volumes (containers only)
    lab.node         the node's name (node containers and volumes)
    lab.owner        host:pid:start of the lab process that owns the run
    lab.detached     "1" for a cluster left up by `lab up` (owned by its state folder)
    lab.work_dir     the run's folder on the owner's host
    lab.session      an extra tag a caller may add (the test suite's, per worker)

A run whose owner process is gone (same host, pid dead or reused) is a leftover
the reaper removes; a detached run is one only once its folder is gone.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DETACHED",
    "NODE",
    "OWNER",
    "ROLE",
    "RUN",
    "SESSION",
    "WORK_DIR",
    "Owner",
    "RunLabels",
    "new_run_id",
]

RUN = "lab.run"
ROLE = "lab.role"
NODE = "lab.node"
OWNER = "lab.owner"
DETACHED = "lab.detached"
WORK_DIR = "lab.work_dir"
SESSION = "lab.session"


def new_run_id() -> str:
    return uuid.uuid4().hex[:10]


def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot: tells a pid from its reuse."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


@dataclass(frozen=True)
class Owner:
    """The lab process that owns a run."""

    host: str
    pid: int
    start: str

    @staticmethod
    def this_process() -> Owner:
        pid = os.getpid()
        return Owner(socket.gethostname(), pid, _start_ticks(pid) or "?")

    def label(self) -> str:
        return f"{self.host}:{self.pid}:{self.start}"

    @staticmethod
    def parse(text: str) -> Owner | None:
        parts = text.rsplit(":", 2)
        if len(parts) != 3 or not parts[1].isdigit():
            return None
        return Owner(parts[0], int(parts[1]), parts[2])

    def is_local(self) -> bool:
        return self.host == socket.gethostname()

    def is_alive(self) -> bool:
        """Whether the owner still runs; only answerable on its own host (else True)."""
        if not self.is_local():
            return True
        return _start_ticks(self.pid) == self.start


@dataclass(frozen=True)
class RunLabels:
    run_id: str
    owner: Owner
    work_dir: Path
    detached: bool = False
    session: str | None = None
    extra: tuple[tuple[str, str], ...] = field(default=())

    def base(self) -> dict[str, str]:
        labels = {
            RUN: self.run_id,
            OWNER: self.owner.label(),
            WORK_DIR: str(self.work_dir.resolve()),
            DETACHED: "1" if self.detached else "0",
        }
        if self.session is not None:
            labels[SESSION] = self.session
        labels.update(self.extra)
        return labels

    def for_role(self, role: str, node: str | None = None) -> dict[str, str]:
        labels = {**self.base(), ROLE: role}
        if node is not None:
            labels[NODE] = node
        return labels
