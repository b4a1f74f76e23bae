"""The management HTTP API, modelled on Broker-J's REST API, served from its own thread.

    GET /health                             200 {"status": "ok", "name": ..., "role": ...}
    GET /api/latest/virtualhostnode/<name>  200 {"name", "groupName", "role",
                                                 "lastKnownReplicationTransactionId",
                                                 "queues": {"<queue>": {"depth", "unacked"}}}
    anything else                           404 (or 405 for other methods), a JSON error

The HA step adds PUT for node attributes, basic auth and a group view.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

__all__ = ["ManagementServer", "NodeView"]

_VHN_PREFIX = "/api/latest/virtualhostnode/"


class NodeView(Protocol):
    """What the management API can read of a node; each method is safe from any thread."""

    @property
    def name(self) -> str: ...

    def health(self) -> dict[str, Any]: ...

    def virtualhostnode(self) -> dict[str, Any]: ...


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], view: NodeView) -> None:
        self.view = view
        super().__init__(address, _RequestHandler)


class _RequestHandler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        view = self.server.view
        path = urlsplit(self.path).path.rstrip("/") or "/"
        if path == "/health":
            self._reply(200, view.health())
        elif path.startswith(_VHN_PREFIX) and unquote(path[len(_VHN_PREFIX) :]) == view.name:
            self._reply(200, view.virtualhostnode())
        else:
            self._reply(404, {"errorMessage": "not found", "path": path})

    def _not_allowed(self) -> None:
        self._reply(405, {"errorMessage": f"method {self.command} not allowed"})

    do_PUT = do_POST = do_DELETE = do_PATCH = _not_allowed

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


class ManagementServer:
    """The HTTP listener; binding happens in the constructor, serving in `start`'s thread."""

    def __init__(self, host: str, port: int, view: NodeView) -> None:
        self._server = _Server((host, port), view)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="management", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
