"""A ZooKeeper server for the tests of Artemis's ZooKeeper lock manager: a standalone server
on 127.0.0.1, run from the Artemis distribution's own zookeeper jar (the client Artemis uses)
with the two jars its server side needs beside it (lab.targets.artemis.distribution's
SERVER_EXTRAS, fetched with Maven once)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from lab.ground.children import popen_options
from lab.ground.ports import HOST, free_ports, release_ports
from lab.targets.artemis.distribution import SERVER_EXTRAS, ensure_distribution, maven_artifact

MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
TICK_MS = 500


def _answers(port: int) -> bool:
    """ZooKeeper's `srvr` four-letter word answers once the server serves."""
    with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=1) as s:
        s.sendall(b"srvr")
        return b"Zookeeper version" in s.recv(4096)
    return False


@contextlib.contextmanager
def zookeeper(folder: Path, deadline_s: float = 120.0) -> Iterator[str]:
    """A ZooKeeper serving on 127.0.0.1 for the block; yields its `host:port`."""
    home = ensure_distribution().home
    extras = [str(maven_artifact(coordinates)) for coordinates in SERVER_EXTRAS]
    (port,) = free_ports(1)
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "zoo.cfg"
    config.write_text(
        f"tickTime={TICK_MS}\ndataDir={folder / 'data'}\nclientPort={port}\n"
        f"clientPortAddress={HOST}\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n",
        encoding="utf-8",
    )
    classpath = ":".join([f"{home}/lib/*", *extras])
    with (folder / "zookeeper.log").open("ab") as log:
        server = subprocess.Popen(
            ["java", "-Xmx128m", "-cp", classpath, MAIN, str(config)],
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
