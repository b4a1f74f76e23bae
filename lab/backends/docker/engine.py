"""A Docker engine that answers: the one the user points at, or one the lab sets up.

When no engine answers and the lab runs as root on Debian, it installs the
`docker.io` package with apt-get (and `docker-compose`, which docker-compose.yml's
profiles need), starts `dockerd` in the background (its log in
/var/log/lab-dockerd.log) and waits for it; anywhere else it raises a SetupError
saying what is missing. Both steps are idempotent and serialised by a lock file,
so several test workers asking at once install and start one engine.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import subprocess
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

import docker
from docker.errors import DockerException
from requests.exceptions import RequestException

from lab.ground.errors import SetupError
from lab.ground.locks import host_lock

__all__ = [
    "ENGINE_PACKAGES",
    "Say",
    "can_install",
    "connect",
    "dockerd_running",
    "engine_answers",
    "ensure_commands",
    "ensure_engine",
]

Say: TypeAlias = Callable[[str], None]
"""Prints one progress line."""

DOCKERD_LOG = Path("/var/log/lab-dockerd.log")
# command -> Debian package: what the lab installs when it sets up an engine itself
ENGINE_PACKAGES = {"dockerd": "docker.io", "docker-compose": "docker-compose"}
_START_TIMEOUT_S = 60.0


def connect(timeout_s: float = 60.0) -> docker.DockerClient:
    """A client for the engine DOCKER_HOST names (or the local socket); raise if none answers."""
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except (DockerException, RequestException) as exc:
        refused = f"no Docker engine answers at {_where()}: {exc}"
    else:
        return client
    # Outside the handler: the exception's frames hold the socket until then.
    _drop_refused_socket()
    raise SetupError(refused)


def _drop_refused_socket() -> None:
    """Collect the socket docker-py leaves open when the engine refuses its first call.

    docker-py keeps no handle to it, so nothing can close it; collected later, it would
    print a ResourceWarning on the user's stderr beside the lab's one-line error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=ResourceWarning, message="unclosed <socket")
        gc.collect()


def engine_answers() -> bool:
    try:
        connect(timeout_s=5).close()
    except SetupError:
        return False
    return True


def can_install() -> bool:
    """True where the lab may set up an engine itself: as root on Debian, with no DOCKER_HOST."""
    return (
        os.geteuid() == 0
        and Path("/etc/debian_version").is_file()
        and shutil.which("apt-get") is not None
        and not os.environ.get("DOCKER_HOST")
    )


def ensure_engine(say: Say) -> docker.DockerClient:
    """A client for an engine that answers, installing and starting one if the lab may."""
    with contextlib.suppress(SetupError):
        return connect(timeout_s=5)
    if not can_install():
        raise SetupError(
            f"the docker backend needs a Docker engine, and none answers at {_where()}; "
            "install Docker and start it (or set DOCKER_HOST to an engine), "
            "or run the lab as root on Debian so that it installs docker.io itself"
        )
    with _install_lock():
        with contextlib.suppress(SetupError):
            return connect(timeout_s=5)
        _install_missing(ENGINE_PACKAGES, say)
        _start_dockerd(say)
    return connect()


def ensure_commands(wanted: dict[str, str], say: Say) -> None:
    """Install the Debian packages whose commands (command -> package) are missing."""
    missing = sorted({pkg for cmd, pkg in wanted.items() if shutil.which(cmd) is None})
    if not missing:
        return
    if not can_install():
        raise SetupError(
            f"the docker backend needs {', '.join(sorted(wanted))}; install the Debian "
            f"package(s) {' '.join(missing)} (or run the lab as root on Debian to have it do so)"
        )
    with _install_lock():
        _install_missing(wanted, say)


def _install_missing(wanted: dict[str, str], say: Say) -> None:
    """apt-get install what is missing; the caller holds the install lock."""
    missing = sorted({pkg for cmd, pkg in wanted.items() if shutil.which(cmd) is None})
    if not missing:
        return
    say(f"installing {' '.join(missing)} with apt-get (about a minute)")
    started = time.monotonic()
    _apt(["apt-get", "update", "-q"])
    _apt(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing])
    say(f"installed {' '.join(missing)} in {time.monotonic() - started:.0f} s")


def _apt(command: list[str]) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise SetupError(f"{' '.join(command)} failed with status {done.returncode}: {tail}")


def _start_dockerd(say: Say) -> None:
    if not dockerd_running():
        say(f"starting dockerd in the background (log: {DOCKERD_LOG})")
        DOCKERD_LOG.parent.mkdir(parents=True, exist_ok=True)
        with DOCKERD_LOG.open("ab") as log:
            subprocess.Popen(
                ["dockerd"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        if engine_answers():
            say("the Docker engine answers")
            return
        time.sleep(0.5)
    raise SetupError(f"dockerd did not answer within {_START_TIMEOUT_S:.0f} s; see {DOCKERD_LOG}")


def dockerd_running() -> bool:
    """Whether the local dockerd (by its pid file) runs, answering or not."""
    try:
        pid = int(Path("/var/run/docker.pid").read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def _install_lock() -> contextlib.AbstractContextManager[None]:
    return host_lock("docker-engine")


def _where() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
