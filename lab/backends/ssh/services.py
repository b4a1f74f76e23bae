"""The lab services of a run on hosts (lab.targets.on_hosts.LabService): each a process on
the lab's machine, on 127.0.0.1 at a port of its own, started before the nodes and stopped
after them. Each host reaches it at a port of its own 127.0.0.1, forwarded back through the
host's SSH connection: nothing but the SSH connections crosses to the hosts, and a cut or a
netem fault between the hosts never reaches it (it stands for a lock manager on machines of
its own).

    lab's machine                                   host h1
      ZooKeeper 127.0.0.1:<p>  ◀═══ SSH (h1) ═══  127.0.0.1:<q>  ◀── broker n1
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from lab.backends.ssh.connection import HostConnection
from lab.ground.children import popen_options
from lab.ground.errors import ClusterError
from lab.ground.events import Events
from lab.ground.ports import HOST
from lab.targets.on_hosts import LabService

__all__ = ["LabServices"]

READY_TIMEOUT_S = 120.0  # a JVM on two busy cores


class LabServices:
    """The run's lab services, started in order; `stop` is idempotent, for `finally`."""

    def __init__(self, work_dir: Path, events: Events, detached: bool) -> None:
        self.work_dir = work_dir
        self.events = events
        self.detached = detached
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(
        self,
        services: tuple[LabService, ...],
        take_port: Callable[[], int],
        conns: Mapping[str, HostConnection],
    ) -> dict[str, tuple[tuple[str, str], ...]]:
        """Start each service and forward a port of every host back to it; for each node
        (the key of `conns`), each service's name and where its host reaches it."""
        there: dict[str, list[tuple[str, str]]] = {node: [] for node in conns}
        for service in services:
            port = take_port()
            folder = self.work_dir / "services" / service.name
            folder.mkdir(parents=True, exist_ok=True)
            command = service.command(folder, port)
            log_path = folder / "service.log"
            with log_path.open("ab") as log:
                proc = subprocess.Popen(
                    command,
                    cwd=folder,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    **popen_options(self.detached),
                )
            self.procs[service.name] = proc
            _wait_listening(service.name, proc, port, log_path)
            self.events.emit("service.start", None, service=service.name, port=port, pid=proc.pid)
            for node, conn in conns.items():
                there[node].append((service.name, f"{HOST}:{conn.forward_back(port)}"))
        return {node: tuple(found) for node, found in there.items()}

    def stop(self) -> None:
        for name, proc in list(self.procs.items()):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                self.events.emit("service.stop", None, service=name)
            del self.procs[name]

    def pids(self) -> dict[str, int]:
        return {f"service-{name}": proc.pid for name, proc in self.procs.items()}


def _wait_listening(name: str, proc: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ClusterError(
                f"lab service {name} exited with status {proc.returncode} at start; see {log_path}"
            )
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise ClusterError(
        f"lab service {name} did not listen on {HOST}:{port} within {READY_TIMEOUT_S:.0f} s; "
        f"see {log_path}"
    )
