"""What runs killed with SIGKILL left behind, cleared at the start of every `lab` command:
their folders get their result.json (lab.run.active), and their containers, networks and
volumes — found by their labels, whose owner process is gone — are removed, and so are the
tmpfs node disks a killed lab mounted on local processes (`lab-disk:<pid>`), and the packet
filter rules and cgroups it made to cut node links between them (`lab-peers:<pid>.<k>`). Processes
need nothing here: each dies with the lab process that started it (PR_SET_PDEATHSIG),
and Toxiproxy's toxics with Toxiproxy."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

from lab.ground.extras import DOCKER
from lab.run.active import settle_orphans

__all__ = ["clear_orphans"]

_SOCKET = Path("/var/run/docker.sock")


def clear_orphans(log: Path | None = None) -> list[str]:
    """Never fails the command it runs before; returns what it cleared. What could not be
    cleared is appended, one line each, to `log` (the lab's state folder's orphans.log):
    the next command tries again."""
    cleared: list[str] = []
    problems: list[str] = []

    def attempt(what: str, clear: Callable[[], list[str]]) -> None:
        try:
            cleared.extend(clear())
        except Exception as exc:
            problems.append(f"{what}: {type(exc).__name__}: {exc}".replace("\n", " "))

    attempt("run folders", _settle_folders)
    attempt("node disks", _reap_disks)
    attempt("node link filters", _reap_peer_filters)
    # Without the Docker SDK this environment never ran a container to leave behind.
    if DOCKER.installed and (os.environ.get("DOCKER_HOST") or _SOCKET.exists()):
        attempt("containers", _reap_containers)
    if problems and log is not None:
        with contextlib.suppress(OSError):
            log.parent.mkdir(parents=True, exist_ok=True)
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            with log.open("a", encoding="utf-8") as out:
                out.writelines(f"{stamp} could not clear {p}\n" for p in problems)
    return cleared


def _settle_folders() -> list[str]:
    return [f"run folder {folder} (interrupted: SIGKILL)" for folder in settle_orphans()]


def _reap_disks() -> list[str]:
    from lab.backends.process.disks import reap_disks

    return [f"node disk {point} (its lab is gone)" for point in reap_disks()]


def _reap_peer_filters() -> list[str]:
    from lab.backends.process.peer_filter import reap_peer_filters

    return [f"{what} (its lab is gone)" for what in reap_peer_filters()]


def _reap_containers() -> list[str]:
    from lab.backends.docker.reaper import reap_leftovers

    return [f"containers of run {run_id}" for run_id in reap_leftovers()]
