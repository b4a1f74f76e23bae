"""Each node's data: a size-limited tmpfs volume, held by the run's `volumes` container; and
one small folder the run's nodes may share (`shared`: a file lock of a primary and its backups).

A tmpfs volume is unmounted, and its files lost, when no container uses it; the
`volumes` container (no network, `sleep infinity`) keeps every node's volume
mounted, so a node's data survives a kill and restart of its container, and the
disk-fill fault can fill and free a disk whether its node runs, is paused or is down.
"""

from __future__ import annotations

from pathlib import Path

import docker
from docker.errors import APIError, NotFound
from docker.models.containers import Container

from lab.ground.errors import ClusterError

__all__ = ["FILL_FILE", "RunVolumes"]

FILL_FILE = ".lab-disk-fill"
_MOUNT = "/volumes"


class RunVolumes:
    """Creates the nodes' volumes and their keeper; fills and frees a node's disk."""

    def __init__(self, client: docker.DockerClient, prefix: str, size_mb: int, image: str) -> None:
        self.client = client
        self.prefix = prefix
        self.size_mb = size_mb
        self.image = image
        self.keeper: Container | None = None

    def name(self, node: str) -> str:
        return f"{self.prefix}-{node}-data"

    @property
    def shared(self) -> str:
        """The run's one folder every node may mount (a file lock its nodes share)."""
        return f"{self.prefix}-shared"

    def create(
        self, nodes: tuple[str, ...], labels: dict[str, str], node_labels: dict[str, dict[str, str]]
    ) -> None:
        mounts: dict[str, dict[str, str]] = {}
        for node in nodes:
            self.client.volumes.create(
                self.name(node),
                driver="local",
                driver_opts={"type": "tmpfs", "device": "tmpfs", "o": f"size={self.size_mb}m"},
                labels=node_labels[node],
            )
            mounts[self.name(node)] = {"bind": f"{_MOUNT}/{node}", "mode": "rw"}
        self.client.volumes.create(
            self.shared,
            driver="local",
            driver_opts={"type": "tmpfs", "device": "tmpfs", "o": "size=4m"},
            labels=labels,
        )
        mounts[self.shared] = {"bind": f"{_MOUNT}/.shared", "mode": "rw"}
        self.keeper = self.client.containers.run(
            self.image,
            ["sleep", "infinity"],
            name=f"{self.prefix}-volumes",
            detach=True,
            network_mode="none",
            volumes=mounts,
            labels=labels,
            init=True,
        )

    def host_path(self, node: str) -> Path | None:
        """Where this host sees the node's files (a local engine), else None."""
        try:
            mountpoint = Path(self.client.volumes.get(self.name(node)).attrs["Mountpoint"])
        except (APIError, KeyError, TypeError):
            return None
        return mountpoint if mountpoint.is_dir() else None

    def fill(self, node: str) -> int:
        """Write one file until the disk is full (ENOSPC); return its size in bytes."""
        path = f"{_MOUNT}/{node}/{FILL_FILE}"
        script = (
            f"dd if=/dev/zero of={path} bs=1M conv=notrunc oflag=append 2>/dev/null; "
            f"dd if=/dev/zero of={path} bs=4k conv=notrunc oflag=append 2>/dev/null; "
            f"stat -c %s {path}"
        )
        return int(self._run(["sh", "-c", script]).strip() or 0)

    def free(self, node: str) -> None:
        self._run(["rm", "-f", f"{_MOUNT}/{node}/{FILL_FILE}"])

    def free_bytes(self, node: str) -> int:
        return int(self._run(["df", "-B1", "--output=avail", f"{_MOUNT}/{node}"]).split()[-1])

    def _run(self, command: list[str]) -> str:
        if self.keeper is None:
            raise ClusterError("the cluster's volumes are not there")
        try:
            code, output = self.keeper.exec_run(command)
        except (APIError, NotFound) as exc:
            raise ClusterError(f"docker exec in the volumes container failed: {exc}") from exc
        text = output.decode("utf-8", "replace") if isinstance(output, bytes) else ""
        if code != 0:
            raise ClusterError(f"{' '.join(command)} failed with status {code}: {text.strip()}")
        return text
