"""Removing what runs leave behind: containers, networks and volumes, found by label.

`remove_run` removes one run (what `DockerCluster.stop` and `lab down` call);
`reap` removes every run whose owner died (what `lab down` and the test suite's
teardown call). Testcontainers' own reaper (Ryuk) needs a pulled image, so the lab
does this itself. Nothing without the `lab.run` label is ever touched.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import APIError, NotFound

from lab.backends.docker.engine import connect
from lab.backends.docker.labels import DETACHED, NODE, OWNER, ROLE, RUN, WORK_DIR, Owner
from lab.ground.errors import SetupError

__all__ = ["Leftovers", "down", "leftovers", "reap", "reap_leftovers", "remove_run"]


@dataclass(frozen=True)
class Leftovers:
    """Names of the lab's resources that carry a given label."""

    containers: tuple[str, ...]
    networks: tuple[str, ...]
    volumes: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not (self.containers or self.networks or self.volumes)


def leftovers(client: docker.DockerClient, label: str = RUN) -> Leftovers:
    """The lab's resources carrying `label` (`key` or `key=value`)."""
    filters = {"label": label}
    return Leftovers(
        containers=tuple(sorted(c.name for c in client.containers.list(all=True, filters=filters))),
        networks=tuple(sorted(n.name for n in client.networks.list(filters=filters))),
        volumes=tuple(sorted(v.name for v in client.volumes.list(filters=filters))),
    )


def remove_run(
    client: docker.DockerClient, run_id: str, *, save_logs_in: Path | None = None
) -> list[str]:
    """Remove every container, network and volume of one run; return their names.

    With `save_logs_in`, each node's log goes to `nodes/<node>/broker.log` there first
    (a detached cluster has nobody reading its logs while it runs).
    """
    filters = {"label": f"{RUN}={run_id}"}
    removed: list[str] = []
    containers = client.containers.list(all=True, filters=filters)
    # Nodes and Toxiproxy before the volume keeper, so no volume is in use at the end.
    containers.sort(key=lambda c: c.labels.get(ROLE) == "volumes")
    for container in containers:
        if save_logs_in is not None:
            _save_log(container, save_logs_in)
        with contextlib.suppress(NotFound):
            container.remove(force=True, v=True)
            removed.append(container.name)
    for network in client.networks.list(filters=filters):
        with contextlib.suppress(NotFound):
            network.remove()
            removed.append(network.name)
    for volume in client.volumes.list(filters=filters):
        with contextlib.suppress(NotFound):
            volume.remove(force=True)
            removed.append(volume.name)
    return removed


def reap(client: docker.DockerClient) -> list[str]:
    """Remove the runs whose owner died; return the run ids removed."""
    runs: dict[str, dict[str, str]] = {}
    for resource in (
        *client.containers.list(all=True, filters={"label": RUN}),
        *client.networks.list(filters={"label": RUN}),
        *client.volumes.list(filters={"label": RUN}),
    ):
        labels = _labels(resource)
        runs.setdefault(labels[RUN], labels)
    dead = [run_id for run_id, labels in sorted(runs.items()) if _abandoned(labels)]
    for run_id in dead:
        with contextlib.suppress(APIError):
            remove_run(client, run_id)
    return dead


def down(run_id: str, work_dir: Path) -> list[str]:
    """`lab down` for a docker cluster: save its logs, remove the run and any dead runs.

    Returns the roles removed (node names, `toxiproxy`), as `lab down` reports them.
    """
    client = connect()
    try:
        roles = sorted(
            c.labels.get(NODE) or c.labels.get(ROLE, c.name)
            for c in client.containers.list(all=True, filters={"label": f"{RUN}={run_id}"})
            if c.labels.get(ROLE) != "volumes"
        )
        remove_run(client, run_id, save_logs_in=work_dir)
        reap(client)
        return roles
    finally:
        client.close()


def reap_leftovers() -> list[str]:
    """Remove dead runs if an engine answers (none answering: nothing can be left). A busy
    engine gets a while to answer: a slow answer must not leave a killed run's containers."""
    try:
        client = connect(timeout_s=30)
    except SetupError:
        return []
    try:
        return reap(client)
    finally:
        client.close()


def _labels(resource: object) -> dict[str, str]:
    attrs = getattr(resource, "attrs", {}) or {}
    labels = attrs.get("Labels") or attrs.get("Config", {}).get("Labels") or {}
    return {str(k): str(v) for k, v in labels.items()}


def _abandoned(labels: dict[str, str]) -> bool:
    owner = Owner.parse(labels.get(OWNER, ""))
    if owner is None or not owner.is_local():
        return False  # not ours to judge: another host's lab, or no owner recorded
    if labels.get(DETACHED) == "1":
        work_dir = labels.get(WORK_DIR)
        return work_dir is not None and not Path(work_dir).exists()
    return not owner.is_alive()


def _save_log(container: object, folder: Path) -> None:
    labels = _labels(container)
    role = labels.get(ROLE)
    if role == "node" and NODE in labels:
        path = folder / "nodes" / labels[NODE] / "broker.log"
    elif role == "toxiproxy":
        path = folder / "toxiproxy.log"
    else:
        return
    with contextlib.suppress(APIError, OSError):
        text = container.logs(stdout=True, stderr=role == "toxiproxy")  # type: ignore[attr-defined]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text)
