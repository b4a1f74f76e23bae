"""What runs killed with SIGKILL left behind, cleared at the start of every `lab` command:
their folders get their result.json (lab.run.active), and their containers, networks and
volumes — found by their labels, whose owner process is gone — are removed, and so are the
tmpfs node disks a killed lab mounted on local processes (`lab-disk:<pid>`), and the packet
filter rules and cgroups it made to cut node links between them (`lab-peers:<pid>.<k>`), the
namespace rigs it made and what its runs put on their hosts (lab.backends.ssh.reaper), and
the scratch copies of the tree a detection benchmark made (`lab-zoo-<pid>-…`). Processes
need nothing here: each dies with the lab process that started it (PR_SET_PDEATHSIG),
and Toxiproxy's toxics with Toxiproxy."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from lab.ground.extras import DOCKER, HOSTS

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
    attempt("namespace rigs", _reap_rigs)
    # The SSH side (AsyncSSH) is loaded only when a run's record says a host needs cleaning.
    if _host_sessions_orphaned():
        attempt("hosts", _reap_host_sessions)
    attempt("scratch trees", _reap_scratch)
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
    from lab.run.active import settle_orphans

    return [f"run folder {folder} (interrupted: SIGKILL)" for folder in settle_orphans()]


def _reap_disks() -> list[str]:
    from lab.backends.process.disks import reap_disks

    return [f"node disk {point} (its lab is gone)" for point in reap_disks()]


def _reap_peer_filters() -> list[str]:
    from lab.backends.process.peer_filter import reap_peer_filters

    return [f"{what} (its lab is gone)" for what in reap_peer_filters()]


def _reap_scratch() -> list[str]:
    from lab.bench.scratch import reap_scratch

    return [f"scratch tree {folder} (its benchmark is gone)" for folder in reap_scratch()]


def _reap_rigs() -> list[str]:
    from lab.backends.ssh.reaper import reap_rigs

    return [f"{what} (its lab is gone)" for what in reap_rigs()]


def _host_sessions_orphaned() -> bool:
    """Whether a run that put something on its hosts is gone (read from the lab's records,
    without loading the SSH side); never when AsyncSSH is missing, since then no run could
    have reached a host."""
    from lab.backends.ssh.registry import HOST_SESSIONS

    if not any(record.orphaned for record in HOST_SESSIONS.records()):
        return False
    return HOSTS.installed


def _reap_host_sessions() -> list[str]:
    from lab.backends.ssh.session import reap_host_sessions

    return reap_host_sessions()


def _reap_containers() -> list[str]:
    if not _engine_may_hold_lab_resources():
        return []
    from lab.backends.docker.reaper import reap_leftovers

    return [f"containers of run {run_id}" for run_id in reap_leftovers()]


_LABEL_FILTER = urllib.parse.quote(json.dumps({"label": ["lab.run"]}))  # labels.RUN
_ASKED = (
    f"/containers/json?all=1&filters={_LABEL_FILTER}",
    f"/networks?filters={_LABEL_FILTER}",
    f"/volumes?filters={_LABEL_FILTER}",
)


def _engine_may_hold_lab_resources() -> bool:
    """Whether the local engine holds a container, network or volume of any lab run, asked
    with plain requests on its socket (the Docker SDK takes longer to load than the reaping
    it does when there is nothing to reap). True when unsure: another engine (DOCKER_HOST),
    or no clear answer."""
    if os.environ.get("DOCKER_HOST"):
        return True
    try:
        for path in _ASKED:
            connection = _SocketConnection(str(_SOCKET))
            try:
                connection.request("GET", path, headers={"Host": "docker"})
                answer = connection.getresponse()
                found = json.loads(answer.read()) if answer.status == 200 else None
            finally:
                connection.close()
            if isinstance(found, dict):  # volumes come as {"Volumes": [...] or null, …}
                found = found.get("Volumes") or []
            if not isinstance(found, list) or found:
                return True
    except (OSError, ValueError, http.client.HTTPException):
        return True
    return False


class _SocketConnection(http.client.HTTPConnection):
    """HTTP on a Unix socket (the engine's API)."""

    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=10)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)
