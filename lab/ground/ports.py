"""Ports on 127.0.0.1: free ones for the lab's processes, and a clash check for chosen ones."""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from lab.ground.errors import ClusterError, PortClashError

__all__ = ["HOST", "free_ports", "release_ports", "require_free"]

HOST = "127.0.0.1"

# Ports below the kernel's ephemeral range: a node restarted after a kill gets its
# port back, because no outgoing connection can have been given it meanwhile.
_LOW, _HIGH = 20000, 32000


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


# Ports handed out are also reserved on this machine (a lock file held open), so that
# another lab process (a parallel test worker) cannot take the port of a node that is
# down for a moment and is about to be restarted on it.
_RESERVATIONS = Path(tempfile.gettempdir()) / "lab-ports"
_held: dict[int, int] = {}


def _reserve(port: int) -> bool:
    if port in _held:
        return False
    _RESERVATIONS.mkdir(exist_ok=True)
    fd = os.open(_RESERVATIONS / f"{port}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _held[port] = fd
    return True


def release_ports(ports: Iterable[int]) -> None:
    """Give back ports `free_ports` reserved (they are given back at exit anyway)."""
    for port in ports:
        fd = _held.pop(port, None)
        if fd is not None:
            os.close(fd)


def free_ports(count: int) -> list[int]:
    """`count` distinct ports on 127.0.0.1 that nothing listens on right now and no other
    lab process has reserved; they stay reserved for this process until released."""
    picker = random.Random(os.getpid() * 1_000_003 + time.monotonic_ns())
    chosen: list[int] = []
    for _ in range(count * 200):
        if len(chosen) == count:
            break
        port = picker.randrange(_LOW, _HIGH)
        if port not in chosen and _bindable(port) and _reserve(port):
            chosen.append(port)
    if len(chosen) < count:
        release_ports(chosen)
        raise ClusterError(f"could not find {count} free ports on {HOST}")
    return chosen


def require_free(port: int, what: str, option: str) -> None:
    """Raise a one-line PortClashError when a port the user chose is taken."""
    if not 0 < port < 65536:
        raise PortClashError(f"{what} port {port} is not a valid TCP port")
    if not _bindable(port):
        raise PortClashError(
            f"{what} port {port} on {HOST} is already in use; choose another with {option} "
            "or leave it out to get a free one"
        )
