"""Toxiproxy: the server process and the only code that talks to its API.

toxiproxy-python keeps the server's host and port in class-level globals; every
call here sets them under one lock first, so several servers (one per run) can be
driven from one process. Nothing else in the lab imports `toxiproxy`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import NotFound
from toxiproxy.server import Toxiproxy

from lab.ground.errors import ClusterError, SetupError
from lab.ground.paths import LAB_ROOT
from lab.ground.ports import HOST

__all__ = ["ProxyInfo", "ToxiproxyClient", "find_server_binary", "start_server"]

_API_LOCK = threading.Lock()
TOXIC_TYPES = (
    "latency",
    "bandwidth",
    "slow_close",
    "timeout",
    "reset_peer",
    "slicer",
    "limit_data",
)


SERVER_VERSION = "v2.12.0"  # the one scripts/bootstrap.sh builds


def install_hint() -> str:
    """How to get toxiproxy-server: the bootstrap in a checkout of the lab; where the lab was
    installed with pip (no scripts/), Go's own command, by the module path."""
    if (LAB_ROOT / "scripts" / "bootstrap.sh").is_file():
        return "run scripts/bootstrap.sh to install it (it builds it with `go install`; needs Go)"
    module = f"github.com/Shopify/toxiproxy/v2/cmd/server@{SERVER_VERSION}"
    return (
        f"install it on PATH as toxiproxy-server: GOBIN=DIR go install {module}, "
        "then rename DIR/server to DIR/toxiproxy-server"
    )


def find_server_binary() -> str:
    """The toxiproxy-server to run: one on PATH, else the one the bootstrap put in the venv."""
    on_path = shutil.which("toxiproxy-server")
    if on_path:
        return on_path
    in_venv = Path(sys.prefix) / "bin" / "toxiproxy-server"
    if in_venv.is_file() and os.access(in_venv, os.X_OK):
        return str(in_venv)
    raise SetupError(f"toxiproxy-server not found on PATH or in {in_venv.parent}; {install_hint()}")


def start_server(
    port: int,
    log_path: Path,
    *,
    popen_extra: dict[str, Any] | None = None,
    timeout_s: float = 10.0,
) -> subprocess.Popen[bytes]:
    """Start toxiproxy-server on 127.0.0.1:port and wait until its API answers."""
    binary = find_server_binary()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [binary, "-host", HOST, "-port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            **(popen_extra or {}),
        )
    deadline = time.monotonic() + timeout_s
    url = f"http://{HOST}:{port}/version"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ClusterError(
                f"toxiproxy-server exited with status {proc.returncode} at start; see {log_path}"
            )
        try:
            if requests.get(url, timeout=0.5).ok:
                return proc
        except requests.RequestException:
            pass
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    raise ClusterError(f"toxiproxy-server did not answer on {HOST}:{port} within {timeout_s} s")


@dataclass(frozen=True)
class ProxyInfo:
    name: str
    listen: str
    upstream: str
    enabled: bool

    @property
    def listen_port(self) -> int:
        return int(self.listen.rsplit(":", 1)[1])


class ToxiproxyClient:
    """Drives one Toxiproxy server's API (proxies, enable/disable, toxics)."""

    def __init__(self, port: int, host: str = HOST) -> None:
        self.host = host
        self.port = port

    def _call(self, fn: Callable[[Toxiproxy], Any]) -> Any:
        with _API_LOCK:
            APIConsumer.host = self.host
            APIConsumer.port = self.port
            try:
                return fn(Toxiproxy())
            except requests.RequestException as exc:
                raise ClusterError(f"Toxiproxy API on {self.host}:{self.port}: {exc}") from exc

    def create(self, name: str, listen: str, upstream: str) -> ProxyInfo:
        proxy = self._call(lambda t: t.create(upstream=upstream, name=name, listen=listen))
        return ProxyInfo(proxy.name, proxy.listen, proxy.upstream, bool(proxy.enabled))

    def proxies(self) -> dict[str, ProxyInfo]:
        found = self._call(lambda t: t.proxies())
        return {
            name: ProxyInfo(p.name, p.listen, p.upstream, bool(p.enabled))
            for name, p in found.items()
        }

    def set_enabled(self, name: str, enabled: bool) -> None:
        def flip(t: Toxiproxy) -> None:
            proxy = t.get_proxy(name)
            if proxy is None:
                raise ClusterError(f"no Toxiproxy proxy named {name!r}")
            if enabled:
                proxy.enable()
            else:
                proxy.disable()

        self._call(flip)

    def set_upstream(self, name: str, upstream: str) -> None:
        """Point the proxy `name` at another upstream (Toxiproxy restarts the proxy, so the
        connections through it drop and clients reconnect to the new one)."""
        url = f"http://{self.host}:{self.port}/proxies/{name}"
        try:
            reply = requests.post(url, json={"upstream": upstream, "enabled": True}, timeout=5)
        except requests.RequestException as exc:
            raise ClusterError(f"Toxiproxy API on {self.host}:{self.port}: {exc}") from exc
        if not reply.ok:
            raise ClusterError(f"Toxiproxy refused to move {name} to {upstream}: {reply.text}")

    def add_toxic(
        self, proxy_name: str, toxic: str, kind: str, stream: str, attributes: dict[str, int]
    ) -> None:
        if kind not in TOXIC_TYPES:
            raise ClusterError(f"unknown toxic type {kind!r}")

        def add(t: Toxiproxy) -> None:
            proxy = t.get_proxy(proxy_name)
            if proxy is None:
                raise ClusterError(f"no Toxiproxy proxy named {proxy_name!r}")
            proxy.add_toxic(name=toxic, type=kind, stream=stream, attributes=attributes)

        self._call(add)

    def remove_toxic(self, proxy_name: str, toxic: str) -> None:
        """Remove a toxic; a toxic or proxy that is already gone is fine (heals are idempotent)."""

        def remove(t: Toxiproxy) -> None:
            proxy = t.get_proxy(proxy_name)
            if proxy is None:
                return
            try:
                proxy.destroy_toxic(toxic)
            except NotFound:
                return

        self._call(remove)

    def toxics(self, proxy_name: str) -> list[str]:
        def names(t: Toxiproxy) -> list[str]:
            proxy = t.get_proxy(proxy_name)
            return [] if proxy is None else sorted(proxy.toxics())

        result: list[str] = self._call(names)
        return result

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self._call(lambda t: t.reset())
