"""RabbitMQ on the lab's machine: Debian's `rabbitmq-server` package (3.10.8 on Debian 12,
with its Erlang), installed with apt-get on first use as root on Debian; nothing else is
needed. The package's own service is not used: every node of a run is started by the lab
with its own name, ports, configuration and folders (lab.targets.rabbitmq.config)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from lab.ground.errors import SetupError
from lab.ground.packages import can_install, ensure_packages, file_present

__all__ = [
    "CTL",
    "EPMD",
    "INSTALL",
    "PACKAGE",
    "SERVER",
    "VERSION",
    "ensure_rabbitmq",
    "installed_version",
]

PACKAGE = "rabbitmq-server"
VERSION = "3.10.8"  # Debian 12's; the lab's runs and declarations were made with it
BIN = Path("/usr/lib/rabbitmq/bin")
SERVER = BIN / "rabbitmq-server"  # the script itself (/usr/sbin's wrapper changes user)
CTL = BIN / "rabbitmqctl"
EPMD = "epmd"  # Erlang's port mapper, from the package's erlang-base
INSTALL = f"apt-get install -y --no-install-recommends {PACKAGE}"
_LIB = Path("/usr/lib/rabbitmq/lib")


def _say_on_stderr(line: str) -> None:
    print(f"lab: rabbitmq: {line}", file=sys.stderr, flush=True)


def installed_version() -> str | None:
    """The version of the installed server (from its library folder's name), or None."""
    found = sorted(_LIB.glob("rabbitmq_server-*")) if _LIB.is_dir() else []
    if not found or not SERVER.is_file():
        return None
    match = re.match(r"rabbitmq_server-(.+)$", found[-1].name)
    return match.group(1) if match else None


def ensure_rabbitmq() -> str:
    """The installed version, after installing Debian's package when it is missing and this
    process may (root, Debian); a SetupError with the install command otherwise."""
    if installed_version() is None:
        if not can_install():
            raise SetupError(
                f"--target rabbitmq needs RabbitMQ: {INSTALL} (as root on Debian the lab does "
                "it on first use)"
            )
        ensure_packages({PACKAGE: file_present(str(SERVER))}, "--target rabbitmq", _say_on_stderr)
    version = installed_version()
    if version is None:
        raise SetupError(f"--target rabbitmq: {SERVER} is missing after installing {PACKAGE}")
    return version
