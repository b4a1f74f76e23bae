"""Raw AMQP 1.0 on a socket for the hostile-peer tests: frames built by hand, a peer that
sends and half-closes, and a consumer that stops reading."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from proton import Connection, Data, Described, Transport, ulong

AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
SASL_HEADER = b"AMQP\x03\x01\x00\x00"
OPEN, BEGIN, ATTACH, FLOW, TRANSFER, DISPOSITION, DETACH, END, CLOSE = range(0x10, 0x19)
FRAMING_ERROR = b"amqp:connection:framing-error"


def performative(code: int, *fields: Any) -> bytes:
    data = Data()
    data.put_object(Described(ulong(code), list(fields)))
    return bytes(data.encode())


def frame(
    body: bytes, channel: int = 0, kind: int = 0, doff: int = 2, size: int | None = None
) -> bytes:
    length = 8 + 4 * max(doff - 2, 0) + len(body) if size is None else size
    return struct.pack(">IBBH", length, doff, kind, channel) + b"\0" * 4 * max(doff - 2, 0) + body


OPEN_FRAME = frame(performative(OPEN, "hostile"))


def exchange(port: int, payload: bytes, timeout_s: float = 10.0) -> bytes:
    """Send `payload`, say we are done writing, and read what the node answers until it
    closes the socket."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        try:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
        except OSError:  # the node closed first: what it said is still readable
            pass
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
        return received


class StuckConsumer:
    """A receiver that grants a large credit and then never reads its socket again, while
    still sending heartbeats so the node does not time it out."""

    def __init__(self, port: int, address: str, credit: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.transport = Transport()
        self.connection = Connection()
        self.transport.bind(self.connection)
        self.connection.container = "stuck"
        self.connection.open()
        session = self.connection.session()
        session.open()
        receiver = session.receiver("stuck")
        receiver.source.address = address
        receiver.open()
        receiver.flow(credit)
        self.pump()
        while not receiver.state & receiver.REMOTE_ACTIVE:  # read until attached, then stop
            self.transport.push(self.sock.recv(4096))
            self.pump()

    def pump(self) -> None:
        self.transport.tick(time.monotonic())
        while (pending := self.transport.pending()) > 0:
            sent = self.sock.send(self.transport.peek(pending) or b"")
            self.transport.pop(sent)

    def close(self) -> None:
        self.sock.close()
