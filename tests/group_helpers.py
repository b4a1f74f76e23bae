"""A group of real broker_ref node processes for tests, without Toxiproxy: each node's
config, start, kill, management requests, roles."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from proton import Message
from proton.utils import BlockingConnection

from lab.ground.ports import free_ports

REPO = Path(__file__).resolve().parent.parent


T = TypeVar("T")


def until(read: Callable[[], T], want: Callable[[T], bool], timeout_s: float = 60.0) -> T:
    """Read until `want` holds of what was read, and return it; an AssertionError naming
    the last reading after `timeout_s` (polling with a deadline, never a fixed sleep)."""
    deadline = time.monotonic() + timeout_s
    seen = read()
    while not want(seen):
        if time.monotonic() >= deadline:
            raise AssertionError(f"still {seen!r} after {timeout_s:g} s")
        time.sleep(0.05)
        seen = read()
    return seen


def _free_ports(count: int) -> list[int]:
    """Ports nothing listens on, reserved for this process (lab.ground.ports)."""
    return free_ports(count)


class LocalGroup:
    """A group of broker_ref node processes dialling each other directly (no Toxiproxy)."""

    def __init__(self, root: Path, size: int, **settings: Any) -> None:
        self.root = root
        names = [f"n{i}" for i in range(1, size + 1)]
        ports = _free_ports(3 * size)
        self.ports = {
            n: (ports[3 * i], ports[3 * i + 1], ports[3 * i + 2]) for i, n in enumerate(names)
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.configs: dict[str, dict[str, Any]] = {}
        for name in names:
            amqp, mgmt, repl = self.ports[name]
            config = {
                "name": name,
                "amqp_port": amqp,
                "management_port": mgmt,
                "replication_port": repl,
                "data_dir": str(root / name / "data"),
                "peers": {p: f"127.0.0.1:{self.ports[p][2]}" for p in names if p != name},
            }
            config.update(settings.get(name, {}))
            config.update(settings.get("all", {}))
            self.configs[name] = config

    def start(self, name: str) -> None:
        node_dir = self.root / name
        node_dir.mkdir(parents=True, exist_ok=True)
        path = node_dir / "config.json"
        path.write_text(json.dumps(self.configs[name]))
        with open(node_dir / "stdout.log", "ab") as out, open(node_dir / "stderr.log", "ab") as err:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", "broker_ref", "--config", str(path)],
                stdout=out,
                stderr=err,
                cwd=REPO,
            )

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def request(
        self,
        name: str,
        method: str = "GET",
        body: Any = None,
        auth: str = "admin:admin",
        what: str = "virtualhostnode",
        path_tail: str = "",
    ) -> tuple[int, Any]:
        url = f"http://127.0.0.1:{self.ports[name][1]}/api/latest/{what}/{name}"
        if path_tail:
            url += f"/{path_tail}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=5) as reply:
                return reply.status, json.loads(reply.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")
        except OSError:
            return 0, None

    def roles(self) -> dict[str, str]:
        found = {}
        for name, proc in self.procs.items():
            if proc.poll() is None:
                status, body = self.request(name)
                found[name] = body["role"] if status == 200 else "?"
        return found

    def wait_for(
        self, test: Callable[[dict[str, str]], bool], timeout_s: float = 60.0
    ) -> dict[str, str]:
        deadline = time.monotonic() + timeout_s
        roles: dict[str, str] = {}
        while time.monotonic() < deadline:
            roles = self.roles()
            if test(roles):
                return roles
            time.sleep(0.1)
        raise AssertionError(f"roles never settled: {roles}")

    def master(self) -> str:
        roles = self.wait_for(
            lambda r: (
                list(r.values()).count("MASTER") == 1
                and all(v in ("MASTER", "REPLICA") for v in r.values())
            )
        )
        return next(n for n, r in roles.items() if r == "MASTER")

    def send(self, name: str, count: int, prefix: str) -> None:
        """Send durable messages to the node, each acknowledged (committed) before the next."""
        conn = BlockingConnection(f"127.0.0.1:{self.ports[name][0]}", timeout=10)
        try:
            sender = conn.create_sender("q")
            for i in range(count):
                message = Message(id=f"{prefix}-{i}", body=b"x" * 100, durable=True)
                sender.send(message, timeout=10)
        finally:
            conn.close()

    def oplog(self, name: str) -> str:
        return (self.root / name / "stdout.log").read_text()
