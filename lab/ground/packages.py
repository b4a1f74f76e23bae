"""Debian packages the lab installs on its own machine when a part of it needs them (a
backend, or a target whose nodes run a Debian package: RabbitMQ).

As the Docker backend installs `docker.io`, the hosts backend's namespace rig installs
`openssh-server` (an sshd per namespace) and `libfaketime` (the nodes' clocks) with apt-get,
as root on Debian only, under a machine-wide lock (test workers asking at once install once),
and only what is missing: a second call only checks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from lab.ground.errors import SetupError
from lab.ground.locks import host_lock

__all__ = ["can_install", "command_present", "ensure_packages", "file_present"]

Say = Callable[[str], None]
Present = Callable[[], bool]


def command_present(name: str) -> Present:
    return lambda: shutil.which(name) is not None or Path("/usr/sbin", name).is_file()


def file_present(*patterns: str) -> Present:
    """Present when a file matches one of the glob `patterns` (absolute)."""
    return lambda: any(any(Path("/").glob(p.lstrip("/"))) for p in patterns)


def can_install() -> bool:
    """Whether this process may install Debian packages (root, on Debian, with apt-get)."""
    return (
        os.geteuid() == 0
        and Path("/etc/debian_version").is_file()
        and shutil.which("apt-get") is not None
    )


def ensure_packages(wanted: Mapping[str, Present], purpose: str, say: Say) -> None:
    """Install with apt-get each package (name -> its presence test) found missing; a
    SetupError naming them when this process may not (not root, not Debian)."""
    missing = sorted(pkg for pkg, present in wanted.items() if not present())
    if not missing:
        return
    if not can_install():
        raise SetupError(
            f"{purpose} needs the Debian package(s) {' '.join(missing)}: install them "
            "(or run the lab as root on Debian to have it do so)"
        )
    with host_lock("apt"):
        missing = sorted(pkg for pkg, present in wanted.items() if not present())
        if not missing:
            return
        say(f"installing {' '.join(missing)} with apt-get")
        started = time.monotonic()
        _apt(["apt-get", "update", "-q"])
        _apt(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing])
        say(f"installed {' '.join(missing)} in {time.monotonic() - started:.0f} s")
    still = sorted(pkg for pkg, present in wanted.items() if not present())
    if still:
        raise SetupError(f"{purpose}: apt-get installed {' '.join(still)}, yet they are missing")


def _apt(command: list[str]) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise SetupError(f"{' '.join(command)} failed with status {done.returncode}: {tail}")
