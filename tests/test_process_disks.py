"""A full disk on local processes (J12 without Docker): a tmpfs the run mounts on each
node's data folder as root, filled to ENOSPC and freed, unmounted in teardown, and reaped
by the next `lab` command when the lab that mounted it was killed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab.backends.process import disks
from lab.backends.process.disks import NodeDisks, disk_refusal, lab_disk_mounts, reap_disks
from lab.ground.errors import ClusterError

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="mounting a tmpfs needs root (the lab refuses J12 on processes)"
)


def test_without_root_the_run_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(disks.os, "geteuid", lambda: 1000)
    refusal = disk_refusal()
    assert refusal is not None and "\n" not in refusal and "--backend docker" in refusal
    with pytest.raises(ClusterError, match="needs root"):
        NodeDisks(4).mount("n1", Path("/nonexistent"))


def test_a_node_without_a_disk_cannot_be_filled() -> None:
    with pytest.raises(ClusterError, match="not a size-limited disk"):
        NodeDisks(4).fill("n1")


@needs_root
def test_fill_reaches_enospc_free_returns_the_space_and_teardown_unmounts(tmp_path: Path) -> None:
    data = tmp_path / "n1" / "data"
    disk = NodeDisks(4)
    disk.mount("n1", data)
    try:
        (data / "store.log").write_bytes(b"x" * 1000)
        before = disk.free_bytes("n1")
        written = disk.fill("n1")
        assert written > 3 * 1024 * 1024
        assert disk.free_bytes("n1") < 64 * 1024
        with pytest.raises(OSError):  # the node's own writes fail now
            (data / "more").write_bytes(b"y" * 65536)
        disk.free("n1")
        disk.free("n1")  # idempotent
        assert disk.free_bytes("n1") >= before - 65536
    finally:
        assert disk.unmount_all() == []
    assert all(point != data for _, point in lab_disk_mounts())
    assert not (data / "store.log").exists()  # the tmpfs is gone with its files


@needs_root
def test_a_disk_whose_lab_was_killed_is_reaped(tmp_path: Path) -> None:
    data = tmp_path / "orphan"
    data.mkdir()
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", f"lab-disk:{owner.pid}", str(data)],
            check=True,
        )
        assert (owner.pid, data) in lab_disk_mounts()
        assert data not in reap_disks()  # its lab lives: left alone
    finally:
        owner.kill()
        owner.wait()
    try:
        assert data in reap_disks()
        assert all(point != data for _, point in lab_disk_mounts())
    finally:
        subprocess.run(["umount", "-l", str(data)], capture_output=True, check=False)
