"""Shared by the broker_ref tests: free ports, a node process, sending and receiving."""

from __future__ import annotations

import base64
import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proton import Delivery, Message
from proton.utils import BlockingConnection

from broker_ref.log_store import LOG_FILE_NAME
from lab.ground.ports import free_ports

OPLOG_LINE = re.compile(r"^(\S+) (\w+) \[(\S+)\] ([A-Z]+-\d{4}) : (.*)$")
REPO = Path(__file__).resolve().parent.parent


class _Lines:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


def _free_port() -> int:
    """A port on 127.0.0.1 nothing listens on, reserved for this process (lab.ground.ports):
    below the ephemeral range, so no outgoing connection takes it before it is used."""
    return free_ports(1)[0]


@dataclass
class NodeProcess:
    """One running `python -m broker_ref` and the files it writes."""

    dir: Path
    config: dict[str, Any]
    proc: subprocess.Popen[bytes] | None = None
    starts: int = field(default=0)

    @property
    def url(self) -> str:
        return f"127.0.0.1:{self.config['amqp_port']}"

    @property
    def log_path(self) -> Path:
        return self.dir / "data" / LOG_FILE_NAME

    def stdout(self) -> str:
        return "".join(p.read_text() for p in sorted(self.dir.glob("stdout-*.log")))

    def stderr(self) -> str:
        return "".join(p.read_text() for p in sorted(self.dir.glob("stderr-*.log")))

    def oplog(self) -> list[tuple[str, str, str]]:
        """(level, code, text) of every operational log line so far, in order."""
        found = []
        for line in self.stdout().splitlines():
            match = OPLOG_LINE.match(line)
            assert match, f"not an operational log line: {line!r}"
            assert match.group(3) == self.config["name"]
            found.append((match.group(2), match.group(4), match.group(5)))
        return found

    def start(self) -> None:
        self.starts += 1
        config_path = self.dir / "config.json"
        config_path.write_text(json.dumps(self.config))
        with (
            open(self.dir / f"stdout-{self.starts}.log", "wb") as out,
            open(self.dir / f"stderr-{self.starts}.log", "wb") as err,
        ):
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "broker_ref", "--config", str(config_path)],
                stdout=out,
                stderr=err,
                cwd=REPO,
            )

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"node exited {self.proc.returncode}: {self.stderr()}")
            try:
                if self.get("/health")[1].get("role") == "MASTER":
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"node not MASTER after {timeout_s}s: {self.stderr()}")

    def get(self, path: str, auth: str = "admin:admin") -> tuple[int, dict[str, Any]]:
        url = f"http://127.0.0.1:{self.config['management_port']}{path}"
        request = urllib.request.Request(url)
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def queue(self, name: str) -> dict[str, int]:
        queues: dict[str, dict[str, int]] = self.get("/api/latest/virtualhostnode/n1")[1]["queues"]
        return queues[name]

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 10.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout_s)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


NodeFactory = Callable[..., NodeProcess]


def _send(url: str, address: str, ids: list[str]) -> list[str]:
    """Send each message and return the remote outcome of each, by name."""
    connection = BlockingConnection(url, timeout=10)
    try:
        sender = connection.create_sender(address)
        outcomes = [sender.send(Message(id=i, body=f"body of {i}")).remote_state for i in ids]
        return ["ACCEPTED" if o == Delivery.ACCEPTED else str(o) for o in outcomes]
    finally:
        connection.close()


def _receive_all(url: str, address: str, *, accept: bool = True) -> list[Message]:
    """Receive until the queue has been empty for half a second."""
    connection = BlockingConnection(url, timeout=10)
    received = []
    try:
        receiver = connection.create_receiver(address, credit=50)
        while True:
            try:
                message = receiver.receive(timeout=0.5)
            except Exception:  # proton.Timeout: nothing more
                break
            received.append(message)
            if accept:
                receiver.accept()
    finally:
        connection.close()
    return received
