"""The cluster manager as a process of its own, for clusters that outlive the lab: `lab up
--mode active-passive` and docker-compose's active-passive profile.

    python -m lab.manager --config manager.json

It reaches the brokers only over their management APIs and Toxiproxy's, with the standard
library alone (it runs in a small image of its own under docker-compose), and restarts a
broker that crashed by running its command again (`argv`), by `docker start` (`container`),
or not at all (compose's restart policy does it). Its decisions go to an events file.

    {"nodes": {"n1": {"management": "http://127.0.0.1:8081", "vip_upstream": "127.0.0.1:5672",
                      "argv": [...], "log": ".../broker.log"}, …},
     "credentials": ["admin", "admin"], "toxiproxy": "http://127.0.0.1:8474",
     "vip": "client_vip", "settings": {…ActivePassiveSettings…}, "events": ".../events.jsonl"}
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.ground.children import popen_options, process_alive
from lab.ground.cluster_settings import ActivePassiveSettings
from lab.ground.errors import ClusterError, InputError
from lab.manager.manager import STARTING

__all__ = ["JsonlEvents", "ManagerConfig", "RemoteBrokers"]


@dataclass(frozen=True)
class RemoteNode:
    management: str
    vip_upstream: str
    argv: tuple[str, ...] = ()
    log: str | None = None
    container: str | None = None
    pid: int | None = None  # the broker's process when the manager started


@dataclass(frozen=True)
class ManagerConfig:
    nodes: Mapping[str, RemoteNode]
    credentials: tuple[str, str]
    toxiproxy: str
    vip: str
    settings: ActivePassiveSettings
    events: Path

    @staticmethod
    def read(path: Path) -> ManagerConfig:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            nodes = {
                str(name): RemoteNode(
                    management=str(n["management"]),
                    vip_upstream=str(n["vip_upstream"]),
                    argv=tuple(str(a) for a in n.get("argv", ())),
                    log=n.get("log"),
                    container=n.get("container"),
                    pid=n.get("pid"),
                )
                for name, n in dict(raw["nodes"]).items()
            }
            user, password = raw.get("credentials", ["admin", "admin"])
            return ManagerConfig(
                nodes=nodes,
                credentials=(str(user), str(password)),
                toxiproxy=str(raw["toxiproxy"]).rstrip("/"),
                vip=str(raw.get("vip", "client_vip")),
                settings=ActivePassiveSettings.from_json(raw.get("settings", {})),
                events=Path(raw["events"]),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path}: not a cluster manager's configuration: {exc}") from exc


class JsonlEvents:
    """Events appended to a JSONL file (`-`: standard output), one flushed line each
    (wall-clock `time`, ns)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        line = json.dumps({"v": 1, "time": time.time_ns(), "kind": kind, "node": node, **fields})
        with self._lock:
            if str(self._path) == "-":  # standard output (a container's log)
                print(line, flush=True)
                return
            with self._path.open("a", encoding="utf-8") as out:
                out.write(line + "\n")


class RemoteBrokers:
    """The manager's `Brokers` over HTTP, with restarts by command or container."""

    def __init__(self, config: ManagerConfig) -> None:
        self._config = config
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(sorted(self._config.nodes))

    def _request(
        self, url: str, timeout_s: float, body: dict[str, Any] | None = None, auth: bool = True
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
        request.add_header("Content-Type", "application/json")
        if auth:
            user, password = self._config.credentials
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            text = reply.read()
        return json.loads(text) if text else None

    def _ha_url(self, name: str) -> str:
        return f"{self._config.nodes[name].management.rstrip('/')}/api/latest/ha/{name}"

    def running(self, name: str) -> bool:
        node = self._config.nodes[name]
        if node.container is not None:
            return _container_running(node.container)
        proc = self._procs.get(name)
        if proc is not None:
            return proc.poll() is None
        if node.pid is not None:
            return process_alive(node.pid)
        # A broker this manager does not start (compose: Docker's restart policy does) is
        # taken as running; one that does not answer is starting, or hung.
        return True

    def ha_status(self, name: str, timeout_s: float) -> str | None:
        try:
            body = self._request(self._ha_url(name), timeout_s)
        except TimeoutError:
            return None
        except urllib.error.URLError as exc:
            return None if isinstance(exc.reason, TimeoutError) else STARTING
        except (OSError, ValueError):
            return STARTING
        return str(body.get("status")) if isinstance(body, dict) else STARTING

    def restart(self, name: str) -> None:
        node = self._config.nodes[name]
        if node.container is not None:
            _docker("start", node.container)
        elif node.argv:
            with open(node.log or os.devnull, "ab") as log:
                self._procs[name] = subprocess.Popen(
                    list(node.argv),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    **popen_options(detached=True),
                )

    def fence(self, name: str) -> None:
        node = self._config.nodes[name]
        if node.container is not None:
            _docker("kill", node.container)
        else:
            proc = self._procs.get(name)
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
            elif proc is None and node.pid is not None and process_alive(node.pid):
                os.kill(node.pid, signal.SIGKILL)
                _wait_gone(node.pid)
        self.restart(name)

    def promote(self, name: str) -> None:
        try:
            self._request(self._ha_url(name), 10.0, {"action": "promote"})
        except (OSError, ValueError) as exc:
            raise ClusterError(f"promote {name}: {exc}") from exc

    def point_vip(self, name: str) -> None:
        url = f"{self._config.toxiproxy}/proxies/{self._config.vip}"
        body = {"upstream": self._config.nodes[name].vip_upstream, "enabled": True}
        try:
            self._request(url, 10.0, body, auth=False)
        except (OSError, ValueError) as exc:
            raise ClusterError(f"moving the virtual address to {name}: {exc}") from exc


def _docker(action: str, container: str) -> None:
    subprocess.run(["docker", action, container], capture_output=True, timeout=60, check=False)


def _container_running(container: str) -> bool:
    done = subprocess.run(
        ["docker", "inspect", "-f", "{{.State.Status}}", container],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.returncode == 0 and done.stdout.strip() in ("running", "paused")


def _wait_gone(pid: int, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
