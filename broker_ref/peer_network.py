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

With a `group_secret`, a dialling peer proves it knows the secret in its hello
(peer_auth.py), before anything else it sends is read; the listener proves it back in its
welcome, and the dialler reads nothing else the listener sends until it has (the dialler's
frames flow at once, so a link whose way back is cut still carries them). With
`replication_tls`, every connection is TLS with mutual verification against the run's CA,
and a peer's certificate must be issued to the node it says it is. Whatever the replication
port is sent that is not a peer's proper handshake (junk, a frame too large, silence, a
wrong, stale or replayed proof, a bad certificate) is refused, closed and logged
(REF-1009); nothing it sent reaches the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ssl
from collections.abc import Callable
from typing import Any

from broker_ref.config import NodeConfig
from broker_ref.oplog import Code, OperationalLog
from broker_ref.peer_auth import (
    HANDSHAKE_TIMEOUT_S,
    HELLO_LIMIT,
    AuthFailed,
    ListenerCheck,
    RefusalLog,
    ReplayCache,
)
from broker_ref.peer_auth import accept as accept_peer
from broker_ref.peer_auth import dial as dial_peer
from broker_ref.peer_wire import MAX_FRAME, read_message, write_message
from broker_ref.tls import certificate_names, peer_client_context, peer_server_context

__all__ = ["PeerNetwork"]

RECONNECT_S = 0.1
HIGH_WATER = 4 * 1024 * 1024
MAX_HANDSHAKES = 32  # connections at once that have not finished their handshake
_JUNK = (OSError, ValueError, asyncio.IncompleteReadError)

OnMessage = Callable[[str, dict[str, Any], bytes], None]
Dialled = tuple[asyncio.StreamReader, asyncio.StreamWriter, ListenerCheck]


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
        self._failed: dict[str, str] = {}  # why each peer last failed our check of it
        self._refusal_log = RefusalLog(oplog, Code.PEER_REFUSED)
        self._client_tls = peer_client_context(config)
        self._server_tls = peer_server_context(config)
        self._handshakes = 0
        self._replays = ReplayCache()

    async def start(self, server: asyncio.Server | None = None) -> None:
        self._server = server
        for peer, address in self._config.peers:
            host, port = address.rsplit(":", 1)
            self._tasks.append(asyncio.create_task(self._dial(peer, host, int(port))))

    async def _dial(self, peer: str, host: str, port: int) -> None:
        while True:
            connection = await self._connect(peer, host, port)
            if connection is None:
                await asyncio.sleep(RECONNECT_S)
                continue
            reader, writer, check = connection
            self._out[peer] = writer
            self.on_connected(peer)
            try:
                await self._read_back(peer, reader, check)
            except AuthFailed as exc:
                self._check_failed(peer, str(exc))
                write_message(writer, {"type": "refused", "code": 320, "text": str(exc)})
            except _JUNK:
                pass
            finally:
                if self._out.get(peer) is writer:
                    del self._out[peer]
                writer.close()
            await asyncio.sleep(RECONNECT_S)

    async def _read_back(
        self, peer: str, reader: asyncio.StreamReader, check: ListenerCheck
    ) -> None:
        """What the listener sends on a connection this node dialled: its welcome, a
        refusal, and nothing else (frames are handed on only once the welcome proved the
        secret); returns or raises when the connection is gone."""
        while True:
            limit = MAX_FRAME if check.verified else HELLO_LIMIT
            header, payload = await read_message(reader, limit)
            if header.get("type") == "refused":
                self._refused(peer, header)
                continue
            verified = check.verified
            for frame, data in check.take(header, payload):
                self._on_message(peer, frame, data)
            if check.verified and not verified:
                self._failed.pop(peer, None)

    async def _connect(self, peer: str, host: str, port: int) -> Dialled | None:
        """A connection to `peer` on which this node's hello (and proof) went out, or None
        (after logging a failed check of the peer once per reason)."""
        tls = self._client_tls
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    host, port, ssl=tls, server_hostname=peer if tls is not None else None
                ),
                HANDSHAKE_TIMEOUT_S,
            )
        except ssl.SSLCertVerificationError as exc:
            self._check_failed(peer, f"certificate refused : {exc.verify_message}")
            return None
        except (OSError, TimeoutError):
            return None
        check = dial_peer(writer, self._config.group_secret, self._hello(), peer)
        if check.verified:
            self._failed.pop(peer, None)
        return reader, writer, check

    def _check_failed(self, peer: str, why: str) -> None:
        if self._failed.get(peer) != why:
            self._failed[peer] = why
            self._oplog.warn(Code.PEER_REFUSED, f"Peer refused : node '{peer}' : {why}")

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
        """One incoming connection: its handshake, then a peer's messages."""
        address = writer.get_extra_info("peername")
        where = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)
        if self._handshakes >= MAX_HANDSHAKES:
            self._refusal_log.refused(f"Peer refused : {where} : too many handshakes at once")
            writer.transport.abort()
            return
        generation = self._generation
        self._incoming.add(writer)
        self._handshakes += 1
        handshaking = True
        try:
            peer = await self._handshake(reader, writer, where)
            handshaking = False
            self._handshakes -= 1
            if peer is None:
                return
            while generation == self._generation:
                header, payload = await read_message(reader)
                if header.get("type") == "refused":  # it found this node's welcome wrong
                    why = f"it refused this node's proof : {_shown(header.get('text'))}"
                    self._refusal_log.refused(f"Peer refused : {where} : node '{peer}' : {why}")
                    return
                self._on_message(peer, header, payload)
        except _JUNK:
            pass
        finally:
            if handshaking:
                self._handshakes -= 1
            self._incoming.discard(writer)
            writer.close()

    async def _handshake(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, where: str
    ) -> str | None:
        """The name of the peer on this connection once it passed every check, or None when
        it was refused (logged: REF-1009, HA-1008 or REF-2013)."""
        config = self._config
        try:
            if self._server_tls is not None:
                # (its own timeout: under wait_for the handshake would run in another task)
                tls, timeout = self._server_tls, HANDSHAKE_TIMEOUT_S
                await writer.start_tls(tls, ssl_handshake_timeout=timeout)
            hello, _ = await asyncio.wait_for(
                read_message(reader, HELLO_LIMIT), HANDSHAKE_TIMEOUT_S
            )
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                self._refusal_log.refused(f"Peer refused : {where} : closed inside its hello")
            return None
        except TimeoutError:
            self._refusal_log.refused(f"Peer refused : {where} : no hello in time")
            return None
        except ssl.SSLError as exc:
            self._refusal_log.refused(f"Peer refused : {where} : TLS : {exc.reason or exc}")
            return None
        except ValueError as exc:
            self._refusal_log.refused(f"Peer refused : {where} : not a peer hello : {exc}")
            return None
        peer = _shown(hello.get("node"))
        if (
            hello.get("type") != "hello"
            or hello.get("group") != config.group
            or peer not in config.permitted_nodes
            or peer == config.name
        ):
            self._oplog.warn(Code.INTRUDER_DETECTED, f"Intruder detected : Node '{peer}' ({where})")
            return None
        if config.replication_tls and peer not in certificate_names(
            writer.get_extra_info("peercert")
        ):
            await self._deny(writer, where, peer, "certificate not issued to this node")
            return None
        try:
            welcome = accept_peer(
                config.group_secret, config.group, config.name, hello, self._replays
            )
        except AuthFailed as exc:
            await self._deny(writer, where, peer, str(exc))
            return None
        refusal = self._authentication_refusal(hello)
        if refusal is not None:
            if self._denied.get(peer) != refusal:
                self._denied[peer] = refusal
                self._oplog.warn(Code.HA_AUTH_FAILED, f"{refusal} : node '{peer}'")
            write_message(writer, {"type": "refused", "code": 320, "text": refusal})
            await writer.drain()
            return None
        self._denied.pop(peer, None)
        if welcome is not None:  # not drained: the way back may be cut, and that is fine
            write_message(writer, welcome)
        return peer

    async def _deny(self, writer: asyncio.StreamWriter, where: str, peer: str, why: str) -> None:
        """Refuse a peer that failed a check: log it, tell it why, close."""
        self._refusal_log.refused(f"Peer refused : {where} : node '{peer}' : {why}")
        write_message(writer, {"type": "refused", "code": 320, "text": why})
        with contextlib.suppress(*_JUNK):
            await writer.drain()

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


def _shown(value: object) -> str:
    """A name as a peer gave it, made safe to log (short, one line)."""
    text = str(value)
    return text if len(text) <= 64 else text[:64] + "…"
