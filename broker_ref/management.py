"""The management HTTP API, modelled on Broker-J's REST API, served from its own thread.

    GET  /health                                  200 {"status": "ok", "name", "role"} (no auth)
    GET  /api/latest/virtualhostnode/<name>       200 the node: role, priority, designatedPrimary,
                                                  quorumOverride, lastKnownReplicationTransactionId,
                                                  queues, …
    POST /api/latest/virtualhostnode/<name>       change priority, designatedPrimary,
         (or PUT)  {"attribute": value, …}        quorumOverride; {"role": "MASTER"} transfers
                                                  mastership here. 200, or 422 with
                                                  {"errorMessage"} and nothing changed
    GET  /api/latest/remotereplicationnode/<name> 200 [the other nodes as this node sees them]
    GET  /api/latest/ha/<name>                    an active-passive broker's HA status
                                                  (qpid-ha status); 404 for any other broker
    POST /api/latest/ha/<name>                    {"action": "promote"} (a cluster manager's)
                                                  or {"action": "replicate", "queue", "level"}:
                                                  200, or 422 with {"errorMessage"}

Every /api/ path needs HTTP basic authentication with the node's configured
credentials: 401 otherwise, and nothing changes.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from broker_ref.errors import ChangeRefused

__all__ = ["ChangeRefused", "ManagementServer", "NodeView"]

_VHN_PREFIX = "/api/latest/virtualhostnode/"
_REMOTE_PREFIX = "/api/latest/remotereplicationnode/"
_HA_PREFIX = "/api/latest/ha/"
MAX_BODY = 64 * 1024


class NodeView(Protocol):
    """What the management API can do with a node; each method is safe from any thread."""

    @property
    def name(self) -> str: ...

    @property
    def credentials(self) -> tuple[str, str]: ...

    def health(self) -> dict[str, Any]: ...

    def virtualhostnode(self) -> dict[str, Any]: ...

    def remote_nodes(self) -> list[dict[str, Any]]: ...

    def set_attributes(self, changes: dict[str, Any]) -> None:
        """Apply all the changes or raise ChangeRefused and apply none."""
        ...

    def ha(self) -> dict[str, Any]:
        """The HA status of an active-passive broker; `standalone` for any other."""
        ...

    def ha_action(self, request: dict[str, Any]) -> None:
        """Carry out a promotion or a replication change, or raise ChangeRefused."""
        ...


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], view: NodeView) -> None:
        self.view = view
        super().__init__(address, _RequestHandler)


class _RequestHandler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def _path(self) -> str:
        return urlsplit(self.path).path.rstrip("/") or "/"

    def _authorized(self) -> bool:
        user, password = self.server.view.credentials
        header = self.headers.get("Authorization", "")
        if header.startswith("Basic "):
            try:
                given = base64.b64decode(header[6:], validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                given = ""
            expected = f"{user}:{password}"
            if hmac.compare_digest(given.encode(), expected.encode()):
                return True
        body = json.dumps({"errorMessage": "authentication required"}).encode()
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="broker_ref"')
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return False

    def _named(self, path: str, prefix: str) -> bool:
        return path.startswith(prefix) and unquote(path[len(prefix) :]) == self.server.view.name

    def do_GET(self) -> None:
        view = self.server.view
        path = self._path()
        if path == "/health":
            self._reply(200, view.health())
            return
        if path.startswith("/api/") and not self._authorized():
            return
        if self._named(path, _VHN_PREFIX):
            self._reply(200, view.virtualhostnode())
        elif self._named(path, _REMOTE_PREFIX):
            self._reply(200, view.remote_nodes())
        elif self._named(path, _HA_PREFIX):
            try:
                status = view.ha()
            except TimeoutError:
                self._reply(503, {"errorMessage": "the broker did not answer in time"})
                return
            self._reply(200, status)
        else:
            self._reply(404, {"errorMessage": "not found", "path": path})

    def do_POST(self) -> None:
        path = self._path()
        if path.startswith("/api/") and not self._authorized():
            return
        ha = self._named(path, _HA_PREFIX)
        if not ha and not self._named(path, _VHN_PREFIX):
            self._reply(404, {"errorMessage": "not found", "path": path})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._reply(413, {"errorMessage": "request body too large"})
            return
        try:
            changes = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._reply(400, {"errorMessage": "the body is not JSON"})
            return
        if not isinstance(changes, dict):
            self._reply(422, {"errorMessage": "the body must be a JSON object of attributes"})
            return
        view = self.server.view
        try:
            if ha:
                view.ha_action(changes)
            else:
                view.set_attributes(changes)
        except TimeoutError:
            self._reply(503, {"errorMessage": "the broker did not answer in time"})
            return
        except ChangeRefused as exc:
            self._reply(422, {"errorMessage": str(exc)})
            return
        self._reply(200, {})

    do_PUT = do_POST

    def _not_allowed(self) -> None:
        self._reply(405, {"errorMessage": f"method {self.command} not allowed"})

    do_DELETE = do_PATCH = _not_allowed

    def _reply(self, status: int, body: dict[str, Any] | list[Any]) -> None:
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
