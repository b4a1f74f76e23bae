"""Every `lab` command first asks the engine, with plain requests on its socket, whether any
lab run left something there; only then does it load the Docker SDK to reap. Here the
engine is a small HTTP server on a Unix socket of the test's own."""

from __future__ import annotations

import json
import socketserver
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from lab.cli import orphans


class _Engine(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path, answers: dict[str, object]) -> None:
        self.answers = answers
        self.asked: list[str] = []
        super().__init__(str(path), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Engine

    def do_GET(self) -> None:
        self.server.asked.append(self.path)
        kind = self.path.split("?")[0].strip("/").split("/")[0]
        body = json.dumps(self.server.answers[kind]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def address_string(self) -> str:
        return "engine"

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[_Engine]:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    path = tmp_path / "docker.sock"
    monkeypatch.setattr(orphans, "_SOCKET", path)
    nothing: dict[str, object] = {"containers": [], "networks": [], "volumes": {"Volumes": None}}
    server = _Engine(path, nothing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_an_engine_with_nothing_of_the_lab_needs_no_reaping(engine: _Engine) -> None:
    assert orphans._engine_may_hold_lab_resources() is False
    assert len(engine.asked) == 3
    assert all("lab.run" in path for path in engine.asked)  # asked by the lab's run label


@pytest.mark.parametrize(
    ("kind", "held"),
    [
        ("containers", [{"Id": "c1"}]),
        ("networks", [{"Name": "lab-x-net"}]),
        ("volumes", {"Volumes": [{"Name": "lab-x-n1"}]}),
    ],
)
def test_anything_of_a_lab_run_is_reaped(engine: _Engine, kind: str, held: object) -> None:
    engine.answers[kind] = held
    assert orphans._engine_may_hold_lab_resources() is True


def test_an_engine_that_does_not_answer_clearly_is_reaped_the_long_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(orphans, "_SOCKET", tmp_path / "nobody-listens.sock")
    assert orphans._engine_may_hold_lab_resources() is True
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")  # another engine: not asked here
    assert orphans._engine_may_hold_lab_resources() is True
