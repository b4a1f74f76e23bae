"""Removing what runs leave behind: containers, networks and volumes, found by label.

`remove_run` removes one run (what `DockerCluster.stop` and `lab down` call);
`reap` removes every run whose owner died (what every `lab` command does first, and
`lab down`). Testcontainers' own reaper (Ryuk) needs a pulled image, so the lab
does this itself. Nothing without the `lab.run` label is ever touched.

Several lab processes may reap at once (test workers, a user's shells): reaping holds
a machine-wide lock, and a removal the engine refuses (a conflict, a removal already
in progress, a slow answer) is tried again on what is still there, until nothing of
the run is left or the attempts run out — then it is an error naming what is left,
never a silent partial removal.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import docker
import requests
from docker.errors import APIError, NotFound

from lab.backends.docker.engine import connect, dockerd_running
from lab.backends.docker.labels import DETACHED, NODE, OWNER, ROLE, RUN, WORK_DIR, Owner
from lab.ground.errors import ClusterError, SetupError
from lab.ground.locks import host_lock

__all__ = [
    "Leftovers",
    "Reaped",
    "down",
    "leftovers",
    "reap",
    "reap_leftovers",
    "remove_run",
]

_ATTEMPTS = 6
_FIRST_WAIT_S = 0.25
_Refusal = (APIError, requests.RequestException)


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
        containers=tuple(
            sorted(
                c.name
                for c in client.containers.list(all=True, filters=filters, ignore_removed=True)
            )
        ),
        networks=tuple(sorted(n.name for n in client.networks.list(filters=filters))),
        volumes=tuple(sorted(v.name for v in client.volumes.list(filters=filters))),
    )


def remove_run(
    client: docker.DockerClient,
    run_id: str,
    *,
    save_logs_in: Path | None = None,
    attempts: int = _ATTEMPTS,
    wait: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Remove every container, network and volume of one run; return their names.

    With `save_logs_in`, each node's log goes to `nodes/<node>/broker.log` there first
    (a detached cluster has nobody reading its logs while it runs). What the engine
    refuses is tried again, waiting longer each time; what is still there after
    `attempts` rounds raises a ClusterError naming it and the engine's last refusal.
    """
    filters = {"label": f"{RUN}={run_id}"}
    removed: list[str] = []
    if save_logs_in is not None:
        for container in client.containers.list(all=True, filters=filters, ignore_removed=True):
            _save_log(container, save_logs_in)
    refusals: dict[str, str] = {}
    pause = _FIRST_WAIT_S
    for attempt in range(attempts):
        if attempt:
            wait(pause)
            pause *= 2
        refusals = {}
        try:
            found = _resources(client, filters)
        except _Refusal as exc:
            refusals = {f"the resources of run {run_id}": _said(exc)}
            continue
        if not found:
            return removed
        for name, remove in found:
            try:
                remove()
                removed.append(name)
            except NotFound:
                pass  # gone already: another lab process reaped it first
            except _Refusal as exc:
                refusals[name] = _said(exc)
        if not refusals:
            return removed
    left = "; ".join(f"{name}: {why}" for name, why in sorted(refusals.items()))
    raise ClusterError(f"run {run_id} is not fully removed after {attempts} attempts: {left}")


def _resources(
    client: docker.DockerClient, filters: dict[str, str]
) -> list[tuple[str, Callable[[], object]]]:
    """What is left of a run, in the order it must go: nodes and Toxiproxy, then the
    volume keeper (so no volume is in use), then networks, then volumes."""
    containers = client.containers.list(all=True, filters=filters, ignore_removed=True)
    containers.sort(key=lambda c: c.labels.get(ROLE) == "volumes")
    found: list[tuple[str, Callable[[], object]]] = [
        (c.name, partial(c.remove, force=True, v=True)) for c in containers
    ]
    found += [(n.name, n.remove) for n in client.networks.list(filters=filters)]
    found += [(v.name, partial(v.remove, force=True)) for v in client.volumes.list(filters=filters)]
    return found


def _said(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


@dataclass(frozen=True)
class Reaped:
    """What one reaping did: the dead runs removed, and those it could not fully remove."""

    removed: tuple[str, ...]
    failed: tuple[str, ...] = ()

    def raise_failures(self) -> None:
        if self.failed:
            raise ClusterError("; ".join(self.failed))


def reap(client: docker.DockerClient, *, attempts: int = _ATTEMPTS) -> Reaped:
    """Remove the runs whose owner died, one lab process at a time on this machine."""
    with host_lock("docker-reaper"):
        runs: dict[str, dict[str, str]] = {}
        for resource in (
            *client.containers.list(all=True, filters={"label": RUN}, ignore_removed=True),
            *client.networks.list(filters={"label": RUN}),
            *client.volumes.list(filters={"label": RUN}),
        ):
            labels = _labels(resource)
            runs.setdefault(labels[RUN], labels)
        dead = [run_id for run_id, labels in sorted(runs.items()) if _abandoned(labels)]
        removed: list[str] = []
        failed: list[str] = []
        for run_id in dead:
            try:
                remove_run(client, run_id, attempts=attempts)
                removed.append(run_id)
            except ClusterError as exc:
                failed.append(str(exc))
        return Reaped(tuple(removed), tuple(failed))


def down(run_id: str, work_dir: Path) -> list[str]:
    """`lab down` for a docker cluster: save its logs, remove the run and any dead runs.

    Returns the roles removed (node names, `toxiproxy`), as `lab down` reports them.
    """
    client = connect()
    try:
        roles = sorted(
            c.labels.get(NODE) or c.labels.get(ROLE, c.name)
            for c in client.containers.list(
                all=True, filters={"label": f"{RUN}={run_id}"}, ignore_removed=True
            )
            if c.labels.get(ROLE) != "volumes"
        )
        remove_run(client, run_id, save_logs_in=work_dir)
        # Other dead runs go too; one that resists is not this command's failure: the
        # next lab command tries again and logs it to the state folder's orphans.log.
        reap(client)
        return roles
    finally:
        client.close()


def reap_leftovers() -> list[str]:
    """Remove dead runs if an engine runs; return the run ids removed, or raise what is left.

    No engine running: nothing can be left. A busy engine gets a while to answer (a slow
    answer must not leave a killed run's containers); one that runs but never answers is
    an error, so that the caller logs it and the next command tries again."""
    try:
        client = connect(timeout_s=30)
    except SetupError:
        if os.environ.get("DOCKER_HOST") or dockerd_running():
            raise
        return []
    try:
        reaped = reap(client)
    finally:
        client.close()
    reaped.raise_failures()
    return list(reaped.removed)


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
