"""A ZooKeeper server for the tests of Artemis's ZooKeeper lock manager on local processes:
the lab's own (lab.targets.artemis.zookeeper), for the block of a test."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from lab.ground.children import popen_options
from lab.ground.ports import HOST, free_ports, release_ports
from lab.targets.artemis.zookeeper import zookeeper_command


def _answers(port: int) -> bool:
    """ZooKeeper's `srvr` four-letter word answers once the server serves."""
    with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=1) as s:
        s.sendall(b"srvr")
        return b"Zookeeper version" in s.recv(4096)
    return False


@contextlib.contextmanager
def zookeeper(folder: Path, deadline_s: float = 120.0) -> Iterator[str]:
    """A ZooKeeper serving on 127.0.0.1 for the block; yields its `host:port`."""
    (port,) = free_ports(1)
    command = zookeeper_command(folder, port)
    with (folder / "zookeeper.log").open("ab") as log:
        server = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            **popen_options(False),
        )
    try:
        give_up = time.monotonic() + deadline_s
        while not _answers(port):
            if server.poll() is not None or time.monotonic() > give_up:
                raise RuntimeError(f"ZooKeeper did not serve; see {folder / 'zookeeper.log'}")
            time.sleep(0.2)
        yield f"{HOST}:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        release_ports([port])
