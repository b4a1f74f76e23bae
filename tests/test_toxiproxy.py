"""The Toxiproxy wrapper against the real server: cut, heal, toxics."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from faults.catalog import fault_for
from lab.backends.toxiproxy import ToxiproxyClient, start_server
from lab.ground.children import popen_options
from lab.ground.faultops import FaultOp
from lab.ground.ports import free_ports

pytestmark = pytest.mark.processes


class _Echo:
    """A TCP echo server on 127.0.0.1 to put behind a proxy."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(4096):
                conn.sendall(data)


class _Cluster:
    """Just enough of a cluster for proxy faults."""

    def __init__(self, client: ToxiproxyClient) -> None:
        self.client = client

    def proxy_client(self) -> ToxiproxyClient:
        return self.client

    def require_link(self, name: str) -> str:
        return name

    def require_proxy(self, name: str) -> str:
        return name

    def set_link(self, name: str, enabled: bool) -> None:
        self.client.set_enabled(name, enabled)

    def check_peer_links(self, how: str) -> None:
        return None


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[_Cluster, int]]:
    echo = _Echo()
    api_port, listen_port = free_ports(2)
    proc = start_server(api_port, tmp_path / "toxiproxy.log", popen_extra=popen_options(False))
    try:
        client = ToxiproxyClient(api_port)
        client.create("client_to_n1", f"127.0.0.1:{listen_port}", f"127.0.0.1:{echo.port}")
        yield _Cluster(client), listen_port
    finally:
        proc.terminate()
        proc.wait()
        echo.sock.close()


def _round_trip(port: int) -> float:
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"ping")
        assert s.recv(4) == b"ping"
    return time.perf_counter() - started


def _op(fault: str, **params: int) -> FaultOp:
    return FaultOp(
        at_s=0, action="start", fault=fault, target="client_to_n1", id="f1", params=params
    )


def test_cut_refuses_connections_and_heal_restores(proxied: tuple[_Cluster, int]) -> None:
    cluster, port = proxied
    _round_trip(port)
    cut = fault_for("cut")
    cut.apply(cluster, _op("cut"))
    with pytest.raises(OSError):
        _round_trip(port)
    assert cluster.client.proxies()["client_to_n1"].enabled is False
    cut.heal(cluster, _op("cut"))
    cut.heal(cluster, _op("cut"))  # heals are idempotent
    _round_trip(port)


def test_latency_toxic_slows_and_heal_removes(proxied: tuple[_Cluster, int]) -> None:
    cluster, port = proxied
    latency = fault_for("latency")
    latency.apply(cluster, _op("latency", latency_ms=300, jitter_ms=0))
    assert cluster.client.toxics("client_to_n1") == ["f1_downstream", "f1_upstream"]
    assert _round_trip(port) >= 0.3
    latency.heal(cluster, _op("latency"))
    latency.heal(cluster, _op("latency"))
    assert cluster.client.toxics("client_to_n1") == []


@pytest.mark.parametrize("kind", ["bandwidth", "timeout", "reset_peer"])
def test_other_toxics_apply_and_heal(proxied: tuple[_Cluster, int], kind: str) -> None:
    cluster, port = proxied
    fault = fault_for(kind)
    fault.apply(cluster, _op(kind))
    assert cluster.client.toxics("client_to_n1") == ["f1_downstream", "f1_upstream"]
    fault.heal(cluster, _op(kind))
    assert cluster.client.toxics("client_to_n1") == []
    _round_trip(port)
