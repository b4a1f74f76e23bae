"""Ports on 127.0.0.1: free ones for the lab's processes, and a clash check for chosen ones."""

from __future__ import annotations

import os
import random
import socket
import time

from lab.errors import ClusterError, PortClashError

__all__ = ["HOST", "free_ports", "require_free"]

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


def free_ports(count: int) -> list[int]:
    """`count` distinct ports on 127.0.0.1 that nothing listens on right now."""
    picker = random.Random(os.getpid() * 1_000_003 + time.monotonic_ns())
    chosen: list[int] = []
    for _ in range(count * 200):
        if len(chosen) == count:
            break
        port = picker.randrange(_LOW, _HIGH)
        if port not in chosen and _bindable(port):
            chosen.append(port)
    if len(chosen) < count:
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
