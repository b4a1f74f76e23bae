"""The management HTTP API, modelled on Broker-J's REST API, served from its own thread.

    GET  /health                                  200 {"status": "ok", "name", "role"} (no auth)
    GET  /api/latest/virtualhostnode/<name>       200 the node: role, priority, designatedPrimary,
                                                  quorumOverride, lastKnownReplicationTransactionId,
                                                  queues, …
    POST /api/latest/virtualhostnode/<name>       change priority, designatedPrimary,
         (or PUT)  {"attribute": value, …}        quorumOverride; {"role": "MASTER"} transfers
                                                  mastership here. 200, or 422 with
                                                  {"errorMessage"} and nothing changed
    GET  /api/latest/remotereplicationnode/<name> 200 [the other members as this node sees them]
    DELETE /api/latest/remotereplicationnode/<name>/<other>
                                                  the master removes the stopped node <other>
                                                  from the group for good: 200; 404 not a
                                                  member; 409 not the master, or <other> active
    GET  /api/latest/ha/<name>                    an active-passive broker's HA status
                                                  (qpid-ha status); 404 for any other broker
    POST /api/latest/ha/<name>                    {"action": "promote"} (a cluster manager's)
                                                  or {"action": "replicate", "queue", "level"}:
                                                  200, or 422 with {"errorMessage"}

Every /api/ path needs HTTP basic authentication with the node's configured
credentials: 401 otherwise, and nothing changes. A body must be at most 64 KiB (413), say
its length (411; a chunked body is refused) and be `application/json` (415); a request
that is refused for what it is, not for what it asks (400, 401, 411, 413, 415, a request
line or headers the server cannot read, a client too slow to send its request), is logged
(REF-1010) and changes nothing. With `management_tls` the API is served over HTTPS.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from broker_ref.errors import ChangeRefused
from broker_ref.oplog import Code, OperationalLog
from broker_ref.peer_auth import RefusalLog

__all__ = ["ChangeRefused", "ManagementServer", "NodeView"]

_VHN_PREFIX = "/api/latest/virtualhostnode/"
_REMOTE_PREFIX = "/api/latest/remotereplicationnode/"
_HA_PREFIX = "/api/latest/ha/"
MAX_BODY = 64 * 1024
REQUEST_TIMEOUT_S = 10.0
SHUTDOWN_POLL_S = 0.05
_LOGGED = (400, 401, 411, 413, 415)


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

    def remove_node(self, name: str) -> None:
        """Remove a member from the group, or raise ChangeRefused (with its status)."""
        ...


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        view: NodeView,
        refusals: RefusalLog | None,
        tls: ssl.SSLContext | None,
    ) -> None:
        self.view = view
        self.refusals = refusals
        self.tls = tls
        super().__init__(address, _RequestHandler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """Serve one connection (in its own thread): the TLS handshake first, if any."""
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        assert isinstance(request, socket.socket)
        request.settimeout(REQUEST_TIMEOUT_S)
        try:
            wrapped = self.tls.wrap_socket(request, server_side=True)
        except (OSError, ValueError) as exc:
            if self.refusals is not None:
                where = f"{client_address[0]}:{client_address[1]}"
                self.refusals.refused(f"Management request refused : TLS : {where} : {exc}")
            return
        try:
            super().finish_request(wrapped, client_address)
        finally:
            wrapped.close()


class _RequestHandler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = REQUEST_TIMEOUT_S

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
        self._refused(401, "authentication required")
        if self.command in ("POST", "PUT"):
            self.close_connection = True
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
        body = self._body()
        if body is None:
            return
        try:
            changes = json.loads(body or b"{}")
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

    def _body(self) -> bytes | None:
        """The request's body, or None once it is refused (411, 413, 415, 400)."""
        if "Transfer-Encoding" in self.headers:
            self._reply(411, {"errorMessage": "a body must say its Content-Length"})
            return None
        text = self.headers.get("Content-Length") or "0"
        length = int(text) if text.isdigit() and len(text) < 10 else -1
        if length < 0:
            self._reply(400, {"errorMessage": f"bad Content-Length {text[:20]!r}"})
            return None
        if length > MAX_BODY:
            self._reply(413, {"errorMessage": f"request body too large (limit {MAX_BODY})"})
            return None
        kind = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if length and kind != "application/json":
            self._reply(415, {"errorMessage": f"the body must be application/json, not {kind!r}"})
            return None
        return self.rfile.read(length)

    def _not_allowed(self) -> None:
        self._reply(405, {"errorMessage": f"method {self.command} not allowed"})

    def do_DELETE(self) -> None:
        path = self._path()
        if path.startswith("/api/") and not self._authorized():
            return
        node, _, other = path.removeprefix(_REMOTE_PREFIX).partition("/")
        view = self.server.view
        if not path.startswith(_REMOTE_PREFIX) or unquote(node) != view.name or not other:
            self._reply(404, {"errorMessage": "not found", "path": path})
            return
        try:
            view.remove_node(unquote(other))
        except TimeoutError:
            self._reply(503, {"errorMessage": "the broker did not answer in time"})
        except ChangeRefused as exc:
            self._reply(exc.status, {"errorMessage": str(exc)})
        else:
            self._reply(200, {})

    do_PATCH = _not_allowed

    def _reply(self, status: int, body: dict[str, Any] | list[Any]) -> None:
        if status in _LOGGED:
            why = body.get("errorMessage", "") if isinstance(body, dict) else ""
            self._refused(status, str(why))
        if status != 200 and self.command in ("POST", "PUT", "DELETE"):
            self.close_connection = True  # a body left unread is not the next request
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refused(self, status: int, why: str) -> None:
        refusals = self.server.refusals
        if refusals is not None:
            where = f"{self.client_address[0]}:{self.client_address[1]}"
            what = f"{self.command} {self.path[:100]}"
            refusals.refused(f"Management request refused : {status} : {what} : {where} : {why}")

    def log_error(self, format: str, *args: Any) -> None:
        """What the server itself refuses (a request line or headers it cannot read, a
        client that sends nothing in time) is logged as a refusal."""
        refusals = self.server.refusals
        if refusals is not None:
            where = f"{self.client_address[0]}:{self.client_address[1]}"
            text = (format % args)[:200]
            refusals.refused(f"Management request refused : {where} : {text}")

    def log_message(self, format: str, *args: Any) -> None:
        return


class ManagementServer:
    """The HTTP listener; binding happens in the constructor, serving in `start`'s thread."""

    def __init__(
        self,
        host: str,
        port: int,
        view: NodeView,
        oplog: OperationalLog | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        refusals = None if oplog is None else RefusalLog(oplog, Code.MANAGEMENT_REFUSED)
        self._server = _Server((host, port), view, refusals, tls)
        # serve_forever looks for a shutdown request every poll interval: 0.5 s by default,
        # which every stop of a node would wait for
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL_S},
            name="management",
            daemon=True,
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
