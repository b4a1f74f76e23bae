"""The pytest plugin's hosts: `--lab-hosts FILE` names the hosts file of `--backend ssh`;
`--lab-hosts rig` makes a rig of five namespace hosts on this machine for the session (as root;
lab.backends.ssh.rig) on first use and takes it down at the session's end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

__all__ = ["hosts_file"]

_RIG: pytest.StashKey[Any] = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("lab", "chaos lab").addoption(
        "--lab-hosts", help="the hosts file of --backend ssh, or rig (one made for the session)"
    )


def hosts_file(config: pytest.Config) -> Path | None:
    """`--lab-hosts FILE`, or with `rig` the hosts file of the session's rig."""
    if (given := config.getoption("--lab-hosts")) != "rig":
        return given and Path(given)
    from lab.backends.ssh.rig import SessionRig

    return Path(config.stash.setdefault(_RIG, SessionRig()).hosts_file())


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The rig down as the session ends (each pytest-xdist worker has its own)."""
    if (rig := session.config.stash.get(_RIG, None)) is not None:
        rig.down()
