"""Size-limited data disks for local processes: a tmpfs mounted on each node's data folder.

A run whose schedule fills a disk (the `disk_fill` fault, J12) needs a disk that can be
filled without filling the host's: as root, the process backend mounts a small tmpfs on
each node's data folder before the nodes start and unmounts it in teardown. The mount's
source names the lab process that made it (`lab-disk:<pid>`), so a mount whose lab was
killed with SIGKILL is found and unmounted by the next `lab` command (`reap_disks`).
Without root there is no mount, and the run is refused before anything starts.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from pathlib import Path

from lab.ground.children import process_alive
from lab.ground.errors import ClusterError

__all__ = ["FILL_FILE", "NodeDisks", "disk_refusal", "lab_disk_mounts", "reap_disks"]

FILL_FILE = ".lab-disk-fill"
SOURCE_PREFIX = "lab-disk:"
_CHUNKS = (1 << 20, 4096)


def disk_refusal() -> str | None:
    """Why this process cannot mount the nodes' disks (one line), or None when it can."""
    if os.geteuid() != 0:
        return (
            "a full disk on local processes needs root (a tmpfs mounted on each node's data "
            "folder); run as root or use --backend docker"
        )
    return None


def _mount_table() -> list[tuple[str, Path]]:
    """(source, mount point) of every mount this process sees."""
    found: list[tuple[str, Path]] = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 2:
                point = fields[1].replace("\\040", " ")
                found.append((fields[0], Path(point)))
    return found


def lab_disk_mounts() -> list[tuple[int, Path]]:
    """(owner pid, mount point) of every node disk a lab process mounted."""
    found: list[tuple[int, Path]] = []
    for source, point in _mount_table():
        owner = source.removeprefix(SOURCE_PREFIX)
        if source.startswith(SOURCE_PREFIX) and owner.isdigit():
            found.append((int(owner), point))
    return found


def _umount(point: Path) -> None:
    done = subprocess.run(["umount", str(point)], capture_output=True, text=True, check=False)
    if done.returncode != 0:  # busy (a node that would not die): detach it now, free it later
        lazy = subprocess.run(
            ["umount", "-l", str(point)], capture_output=True, text=True, check=False
        )
        if lazy.returncode != 0:
            raise ClusterError(f"cannot unmount {point}: {lazy.stderr.strip() or done.stderr}")


def reap_disks() -> list[Path]:
    """Unmount the node disks whose lab process is gone; the mount points unmounted."""
    reaped: list[Path] = []
    for owner, point in lab_disk_mounts():
        if not process_alive(owner):
            with contextlib.suppress(ClusterError):
                _umount(point)
                reaped.append(point)
    return reaped


class NodeDisks:
    """The run's node disks: mounted before the nodes start, unmounted in teardown."""

    def __init__(self, size_mb: int) -> None:
        self.size_mb = size_mb
        self.mounted: dict[str, Path] = {}

    def mount(self, node: str, data_dir: Path) -> None:
        refusal = disk_refusal()
        if refusal is not None:
            raise ClusterError(refusal)
        data_dir.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [
                "mount",
                "-t",
                "tmpfs",
                "-o",
                f"size={self.size_mb}m,mode=0755",
                f"{SOURCE_PREFIX}{os.getpid()}",
                str(data_dir),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise ClusterError(f"cannot mount a tmpfs on {data_dir}: {done.stderr.strip()}")
        self.mounted[node] = data_dir

    def unmount_all(self) -> list[str]:
        """Unmount every disk; the errors, one line each (teardown goes on regardless)."""
        errors: list[str] = []
        for node, point in list(self.mounted.items()):
            try:
                _umount(point)
            except ClusterError as exc:
                errors.append(str(exc))
            self.mounted.pop(node, None)
        return errors

    def _dir(self, node: str) -> Path:
        try:
            return self.mounted[node]
        except KeyError:
            raise ClusterError(
                f"node {node}'s data folder is not a size-limited disk (a run mounts one only "
                "when its schedule fills a disk)"
            ) from None

    def fill(self, node: str) -> int:
        """Write one file until the disk is full (ENOSPC); return its size in bytes."""
        path = self._dir(node) / FILL_FILE
        zeros = bytes(_CHUNKS[0])
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for chunk in _CHUNKS:
                while True:
                    try:
                        os.write(fd, zeros[:chunk])
                    except OSError as exc:
                        if exc.errno != errno.ENOSPC:
                            raise ClusterError(f"cannot fill {path}: {exc.strerror}") from exc
                        break
        finally:
            os.close(fd)
        return path.stat().st_size

    def free(self, node: str) -> None:
        (self._dir(node) / FILL_FILE).unlink(missing_ok=True)

    def free_bytes(self, node: str) -> int:
        stats = os.statvfs(self._dir(node))
        return stats.f_bavail * stats.f_frsize
