"""The lab's own disk: the space a run needs, checked before it starts, and the first write
into the run folder that fails, which stops the run.

    space_needed(spec)            the bytes a run of `spec` writes into its run folder (estimate)
    check_space(runs_dir, spec)   DiskFullError before anything starts when the file system of
                                  `runs_dir` clearly has too little free space for it
    mount_point(path)             the file system a folder is on, to name it
    WriteWatch                    the first failed write of a run's writers (any thread), which
                                  the runner turns into a DiskFullError that stops the run

The estimate comes from the workload, as measured on broker_ref runs on local processes
(master-failure: 1,625 messages of 100 bytes wrote 609 KB of history, 321 KB of store per
node, 155 KB of Toxiproxy log and 34 KB of Parquet copy):

    messages   producers (one more with a side queue) × rate × duration: what the producers
               send if they keep their rate (a run with failovers sends fewer; a rate of 0,
               no limit, counts none: such a run is only stopped at its first failed write)
    history    HISTORY_BYTES_PER_MESSAGE a message: a send's invoke and completion, a receive,
               and a share of retries and drains; and the Parquet copy, PARQUET_SHARE of it
    stores     on local processes, each node's store holds each message: its body and
               STORE_BYTES_PER_MESSAGE of record around it (the enqueue, the dequeue); a
               Broker-J node adds BROKERJ_NODE_BYTES (its BDB JE log files and broker logs:
               an allowance, the default size of one JE log file and a few MB of logs)
    the rest   FIXED_BYTES: spec, schedule, events, node and worker logs, Toxiproxy's log

A run whose file system has less free space than that is refused; one that fits the estimate
and still fills its disk (another process writing there, a slower machine that retries more)
is stopped at its first failed write.
"""

from __future__ import annotations

import errno
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from lab.ground.errors import DiskFullError, UsageError
from lab.ground.spec import RunSpec

__all__ = [
    "FIXED_BYTES",
    "HISTORY_BYTES_PER_MESSAGE",
    "STORE_BYTES_PER_MESSAGE",
    "WriteFailure",
    "WriteWatch",
    "check_space",
    "folder_bytes",
    "free_bytes",
    "mount_point",
    "size_text",
    "space_needed",
]

HISTORY_BYTES_PER_MESSAGE = 420
PARQUET_SHARE = 0.1
STORE_BYTES_PER_MESSAGE = 100
BROKERJ_NODE_BYTES = 16_000_000
FIXED_BYTES = 1_000_000
_FULL = (errno.ENOSPC, errno.EDQUOT)


def space_needed(spec: RunSpec) -> int:
    """The bytes a run of `spec` writes into its run folder, estimated (the module says how)."""
    workload = spec.workload
    producers = workload.producers + (1 if workload.side is not None else 0)
    messages = producers * workload.rate * workload.duration_s
    history = messages * HISTORY_BYTES_PER_MESSAGE * (1 + PARQUET_SHARE)
    nodes = spec.topology.nodes + len(spec.topology.spares)
    stores = 0.0
    if spec.backend == "process":
        stores = nodes * messages * (workload.size + STORE_BYTES_PER_MESSAGE)
        if spec.target == "qpid-broker-j":
            stores += nodes * BROKERJ_NODE_BYTES
    return int(history + stores + FIXED_BYTES)


def free_bytes(folder: Path) -> tuple[Path, int]:
    """The nearest existing folder at or above `folder`, and the bytes free to this user on
    its file system."""
    at = folder.absolute()
    while not at.exists() and at != at.parent:
        at = at.parent
    status = os.statvfs(at)
    return at, status.f_bavail * status.f_frsize


def mount_point(path: Path) -> Path:
    """The mount point of the file system `path` is on."""
    at, _ = free_bytes(path)
    device = at.stat().st_dev
    while at != at.parent and at.parent.stat().st_dev == device:
        at = at.parent
    return at


def check_space(runs_dir: Path, spec: RunSpec) -> int | None:
    """The bytes free for `runs_dir`; DiskFullError, before anything is written, when its file
    system has less free space than a run of `spec` needs (`space_needed`); UsageError when
    it (or the nearest part of it that exists) is a file."""
    needed = space_needed(spec)
    try:
        at, free = free_bytes(runs_dir)
    except OSError:
        return None  # a folder that cannot be looked at is refused when it is made
    if not at.is_dir():
        raise UsageError(f"{at}: a file, not a folder: give a folder for the runs (--runs-dir)")
    if free < needed:
        raise DiskFullError(
            f"{runs_dir}: {size_text(free)} free on its file system ({at}), and this run needs "
            f"about {size_text(needed)} ({spec.workload.producers} producer(s) × "
            f"{spec.workload.rate:g}/s for {spec.workload.duration_s:g} s on "
            f"{spec.topology.nodes} node(s)): free some space or give another --runs-dir"
        )
    return free


def folder_bytes(folder: Path) -> int:
    """The bytes of every file under `folder` (what a run wrote so far)."""
    total = 0
    for root, _folders, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def size_text(size: float) -> str:
    """A size for people: 0 B, 412 KB, 2.3 MB, 1.1 GB (powers of 1000)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return (
                f"{size / scale:.1f} {unit}" if size < 10 * scale else f"{size / scale:.0f} {unit}"
            )
    return f"{size:.0f} B"


@dataclass(frozen=True)
class WriteFailure:
    """A write into the run folder that failed: the file, and the system's reason."""

    path: Path
    code: int
    reason: str

    @property
    def full(self) -> bool:
        """The file system is full (or the user's quota is)."""
        return self.code in _FULL


class WriteWatch:
    """The first failed write of a run's writers, from any thread; the rest are dropped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._first: WriteFailure | None = None

    def failed(self, path: Path, error: OSError) -> None:
        with self._lock:
            if self._first is None:
                reason = error.strerror or str(error)
                self._first = WriteFailure(path, error.errno or 0, reason)

    @property
    def first(self) -> WriteFailure | None:
        return self._first
