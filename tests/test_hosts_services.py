"""The lab services of a run on hosts, above SSH: a real process on this machine's loopback,
each host given the port its SSH connection forwards back to it, and nothing left after
`stop` (the SSH side, forward_back, is exercised on the rig by the Artemis hosts test)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from lab.backends.ssh.connection import HostConnection
from lab.backends.ssh.services import LabServices
from lab.ground.children import process_alive
from lab.ground.errors import ClusterError
from lab.ground.events import NoEvents
from lab.ground.ports import free_ports, release_ports
from lab.targets.on_hosts import HostPlace, LabService

LISTEN = (
    "import socket, sys; s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); "
    "s.listen(); open('ready', 'w').close(); [s.accept()[0].close() for _ in iter(int, 1)]"
)


class _Conn:
    """Stands for a host's SSH connection: it records what it was asked to forward back."""

    def __init__(self, there: int) -> None:
        self.there = there
        self.asked: list[int] = []

    def forward_back(self, local_port: int) -> int:
        self.asked.append(local_port)
        return self.there


def _listener(folder: Path, port: int) -> list[str]:
    return [sys.executable, "-c", LISTEN, str(port)]


def test_a_service_runs_here_and_each_host_reaches_it_at_its_own_forwarded_port(
    tmp_path: Path,
) -> None:
    services = LabServices(tmp_path, NoEvents(), detached=False)
    (port,) = free_ports(1)
    conns = {"n1": _Conn(41001), "n2": _Conn(41002)}
    try:
        there = services.start(
            (LabService("lock", _listener),),
            lambda: port,
            cast("dict[str, HostConnection]", conns),
        )
        assert there == {"n1": (("lock", "127.0.0.1:41001"),), "n2": (("lock", "127.0.0.1:41002"),)}
        assert conns["n1"].asked == [port] and conns["n2"].asked == [port]
        assert (tmp_path / "services" / "lock" / "ready").is_file()  # ran in its own folder
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
        pid = services.pids()["service-lock"]
        assert process_alive(pid)
        assert HostPlace("/r", services=there["n2"]).service("lock") == "127.0.0.1:41002"
    finally:
        services.stop()
        release_ports([port])
    assert not process_alive(pid) and services.pids() == {}
    services.stop()  # idempotent


def test_a_service_that_ends_at_start_is_one_error_naming_its_log(tmp_path: Path) -> None:
    services = LabServices(tmp_path, NoEvents(), detached=False)

    def failing(folder: Path, port: int) -> list[str]:
        return [sys.executable, "-c", "import sys; print('no room'); sys.exit(3)"]

    conns: dict[str, Any] = {"n1": _Conn(1)}
    with pytest.raises(ClusterError, match=r"lab service lock exited with status 3 .*service\.log"):
        services.start((LabService("lock", failing),), lambda: 1, conns)
    services.stop()
    assert "no room" in (tmp_path / "services" / "lock" / "service.log").read_text()
    assert conns["n1"].asked == []  # no host was given a service that never served
