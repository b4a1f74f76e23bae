"""What runs killed with SIGKILL left behind, cleared at the start of every `lab` command:
their folders get their result.json (lab.run.active), and their containers, networks and
volumes — found by their labels, whose owner process is gone — are removed, and so are the
tmpfs node disks a killed lab mounted on local processes (`lab-disk:<pid>`). Processes
need nothing here: each dies with the lab process that started it (PR_SET_PDEATHSIG),
and Toxiproxy's toxics with Toxiproxy."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from lab.run.active import settle_orphans

__all__ = ["clear_orphans"]

_SOCKET = Path("/var/run/docker.sock")


def clear_orphans() -> list[str]:
    """Never fails the command it runs before; returns what it cleared."""
    cleared: list[str] = []
    with contextlib.suppress(Exception):
        cleared += [f"run folder {folder} (interrupted: SIGKILL)" for folder in settle_orphans()]
    with contextlib.suppress(Exception):
        from lab.backends.process.disks import reap_disks

        cleared += [f"node disk {point} (its lab is gone)" for point in reap_disks()]
    if os.environ.get("DOCKER_HOST") or _SOCKET.exists():
        with contextlib.suppress(Exception):
            from lab.backends.docker.reaper import reap_leftovers

            cleared += [f"containers of run {run_id}" for run_id in reap_leftovers()]
    return cleared
