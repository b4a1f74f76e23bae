"""Connections between the nodes of a group, in the group thread's event loop.

Each node dials every peer at the address its config gives (through the lab's
per-pair proxy, so a cut link really cuts) and sends its own messages on that
connection; it receives each peer's messages on the connection the peer
dialled. A node that is not in `permitted_nodes`, or of another group, is
refused as an intruder (HA-1008).

With `ha_auth` on (the C++ broker's HA security), a peer's hello must carry the group's
`ha_username` / `ha_password` with mechanism PLAIN; anything else, ANONYMOUS included, is
refused with code 320 and logged (REF-2013), and the refused node logs the refusal it is
told (REF-2012: "Client closed connection with 320 : …"), as the seed's troubleshooting
section shows. Each node presents its own configured credentials.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from collections.abc import Callable
from typing import Any

from broker_ref.config import NodeConfig
from broker_ref.oplog import Code, OperationalLog
from broker_ref.peer_wire import read_message, write_message

__all__ = ["PeerNetwork"]

RECONNECT_S = 0.1
HIGH_WATER = 4 * 1024 * 1024

OnMessage = Callable[[str, dict[str, Any], bytes], None]


class PeerNetwork:
    def __init__(self, config: NodeConfig, oplog: OperationalLog, on_message: OnMessage) -> None:
        self._config = config
        self._oplog = oplog
        self._on_message = on_message
        self._out: dict[str, asyncio.StreamWriter] = {}
        self._server: asyncio.Server | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._incoming: set[asyncio.StreamWriter] = set()
        self._generation = 0
        self.on_connected: Callable[[str], None] = lambda peer: None
        self._refusals: dict[str, str] = {}  # what each peer last refused us for
        self._denied: dict[str, str] = {}  # what we last refused each peer for

    async def start(self, server: asyncio.Server | None = None) -> None:
        self._server = server
        for peer, address in self._config.peers:
            host, port = address.rsplit(":", 1)
            self._tasks.append(asyncio.create_task(self._dial(peer, host, int(port))))

    async def _dial(self, peer: str, host: str, port: int) -> None:
        while True:
            try:
                reader, writer = await asyncio.open_connection(host, port)
            except OSError:
                await asyncio.sleep(RECONNECT_S)
                continue
            write_message(writer, self._hello())
            self._out[peer] = writer
            self.on_connected(peer)
            try:
                # The peer writes on this connection only to refuse it; reading tells when
                # it is gone.
                while True:
                    header, _ = await read_message(reader)
                    if header.get("type") == "refused":
                        self._refused(peer, header)
            except (OSError, ValueError, asyncio.IncompleteReadError):
                pass
            finally:
                if self._out.get(peer) is writer:
                    del self._out[peer]
                writer.close()
            await asyncio.sleep(RECONNECT_S)

    def _hello(self) -> dict[str, Any]:
        config = self._config
        hello: dict[str, Any] = {"type": "hello", "group": config.group, "node": config.name}
        hello["mechanism"] = config.ha_mechanism
        if config.ha_mechanism == "PLAIN":
            hello.update(username=config.ha_username, password=config.ha_password)
        return hello

    def _refused(self, peer: str, header: dict[str, Any]) -> None:
        text = f"Client closed connection with {header.get('code')} : {header.get('text')}"
        if self._refusals.get(peer) != text:  # once per reason, not at every redial
            self._refusals[peer] = text
            self._oplog.warn(Code.HA_LINK_REFUSED, text)

    def _authentication_refusal(self, hello: dict[str, Any]) -> str | None:
        """Why the peer's hello does not authenticate, or None when it does (or no
        authentication is asked for)."""
        config = self._config
        if not config.ha_auth:
            return None
        user = str(hello.get("username", ""))
        if hello.get("mechanism") != "PLAIN":
            return f"User anonymous@QPID federation connection denied ({hello.get('mechanism')})"
        given = str(hello.get("password", "")).encode()
        if user == config.ha_username and hmac.compare_digest(given, config.ha_password.encode()):
            return None
        return f"Authentication failed for {user or 'anonymous'}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One incoming connection: a peer's hello, then its messages."""
        address = writer.get_extra_info("peername")
        generation = self._generation
        self._incoming.add(writer)
        try:
            hello, _ = await asyncio.wait_for(read_message(reader), timeout=5)
            peer = str(hello.get("node"))
            if (
                hello.get("type") != "hello"
                or hello.get("group") != self._config.group
                or peer not in self._config.permitted_nodes
                or peer == self._config.name
            ):
                self._oplog.warn(
                    Code.INTRUDER_DETECTED,
                    f"Intruder detected : Node '{peer}' ({address[0]}:{address[1]})",
                )
                return
            refusal = self._authentication_refusal(hello)
            if refusal is not None:
                if self._denied.get(peer) != refusal:
                    self._denied[peer] = refusal
                    self._oplog.warn(Code.HA_AUTH_FAILED, f"{refusal} : node '{peer}'")
                write_message(writer, {"type": "refused", "code": 320, "text": refusal})
                await writer.drain()
                return
            self._denied.pop(peer, None)
            while generation == self._generation:
                header, payload = await read_message(reader)
                self._on_message(peer, header, payload)
        except (OSError, ValueError, asyncio.IncompleteReadError, TimeoutError):
            pass
        finally:
            self._incoming.discard(writer)
            writer.close()

    def drop_incoming(self) -> None:
        """Forget everything peers sent that is not read yet: close every incoming connection.

        Their senders redial; what was buffered for this node is gone, as it is for a node
        whose master gave up on it while it was stalled.
        """
        self._generation += 1
        for writer in list(self._incoming):
            writer.transport.abort()
        self._incoming.clear()

    def reset(self, peer: str) -> None:
        """Abort the connection to `peer` (queued data is dropped); it is redialled."""
        writer = self._out.pop(peer, None)
        if writer is not None:
            writer.transport.abort()

    def connected(self, peer: str) -> bool:
        return peer in self._out

    def send(self, peer: str, header: dict[str, Any], payload: bytes = b"") -> bool:
        """Send if the link to `peer` is up and not backed up; False when dropped."""
        writer = self._out.get(peer)
        if writer is None or writer.is_closing():
            return False
        if writer.transport.get_write_buffer_size() > HIGH_WATER:
            return False
        write_message(writer, header, payload)
        return True

    async def drain(self, peer: str) -> None:
        writer = self._out.get(peer)
        if writer is not None:
            with contextlib.suppress(OSError, ConnectionError):
                await writer.drain()

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        self.drop_incoming()
        for writer in self._out.values():
            writer.close()
        self._out.clear()
        if self._server is not None:
            self._server.close()
