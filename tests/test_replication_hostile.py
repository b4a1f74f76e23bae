"""Hostile input on the replication port and the management API: refused with a logged
reason (REF-1009, HA-1008, REF-1010), nothing reaches the group, the node keeps serving."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import random
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

import pytest
from group_helpers import LocalGroup, until
from proton import Message
from proton.utils import BlockingConnection

from broker_ref import peer_network
from broker_ref.config import parse_config
from broker_ref.oplog import OperationalLog
from broker_ref.peer_auth import DIALLER, new_nonce, proof
from broker_ref.peer_network import PeerNetwork
from broker_ref.peer_wire import encode_message, read_message

SECRET = "s" * 32
HELLO = {"type": "hello", "group": "lab", "node": "n2", "mechanism": "ANONYMOUS"}


class Listener:
    """A PeerNetwork of node n1 listening on a real socket (it dials nobody)."""

    def __init__(self, secret: str = SECRET) -> None:
        raw = {
            "name": "n1",
            "amqp_port": 1,
            "management_port": 2,
            "data_dir": "d",
            "replication_port": 3,
            "peers": {"n2": "127.0.0.1:9", "n3": "127.0.0.1:9"},
            "group_secret": secret,
        }
        self.out = io.StringIO()
        self.delivered: list[tuple[str, dict[str, Any]]] = []
        self.net = PeerNetwork(
            parse_config(raw),
            OperationalLog("n1", self.out),
            lambda peer, header, payload: self.delivered.append((peer, header)),
        )

    async def __aenter__(self) -> Listener:
        self.server = await asyncio.start_server(self.net.serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.net.stop()
        self.server.close()

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.port)

    async def send_raw(self, data: bytes, wait_s: float = 0.3) -> bytes:
        """Send `data`, return what came back before the listener closed (or `wait_s`)."""
        reader, writer = await self.connect()
        writer.write(data)
        back = b""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                chunk = await asyncio.wait_for(reader.read(1 << 16), deadline - time.monotonic())
            except (TimeoutError, ConnectionError):
                break
            if not chunk:
                break
            back += chunk
        writer.close()
        await asyncio.sleep(0.05)
        return back

    @property
    def log(self) -> str:
        return self.out.getvalue()


def _signed_hello(secret: str, hello: dict[str, Any] = HELLO, at: float | None = None) -> bytes:
    """A member's hello with its proof made with `secret` (and its clock at `at`)."""
    nd, stamp = new_nonce(), int((time.time() if at is None else at) * 1000)
    mine = proof(secret, DIALLER, "lab", hello["node"], "n1", nd, str(stamp))
    return encode_message({**hello, "to": "n1", "nonce": nd, "timestamp": stamp, "proof": mine})


async def _member(
    listener: Listener, secret: str, hello: dict[str, Any] = HELLO
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    """Dial as a member with `secret` (never reading the listener's welcome, as an intruder
    would not); return the connection and every byte sent on it."""
    reader, writer = await listener.connect()
    sent = _signed_hello(secret, hello)
    writer.write(sent)
    return reader, writer, sent


_STATUS = encode_message({"type": "status", "term": 999, "role": "MASTER", "last_txid": 10**6})


def test_a_member_with_the_secret_is_heard() -> None:
    """The control: the same harness delivers what a proper member sends."""

    async def run() -> None:
        async with Listener() as listener:
            _, writer, _ = await _member(listener, SECRET)
            writer.write(_STATUS)
            await asyncio.sleep(0.2)
            assert listener.delivered == [("n2", json.loads(_STATUS[8:]))]
            assert "REF-1009" not in listener.log

    asyncio.run(run())


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (random.Random(7).randbytes(64) + b"\xff" * 8, "not a peer hello"),
        (struct.pack(">II", 10 * 1024 * 1024, 0), "frame too large"),
        (struct.pack(">II", 0, 1 << 30), "frame too large"),
        (struct.pack(">II", 5, 0) + b"\xff\xfe{}x", "not a peer hello"),
        (struct.pack(">II", 4, 0) + b"[12]", "header is not an object"),
        (
            struct.pack(">II", 60000, 0) + b"[" * 60000,
            "not a peer hello",
        ),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "frame too large"),
        (struct.pack(">II", 100, 0) + b"{", "closed inside its hello"),
    ],
)
def test_junk_on_the_replication_port_is_refused_and_logged(data: bytes, why: str) -> None:
    async def run() -> None:
        async with Listener() as listener:
            await listener.send_raw(data)
            await asyncio.sleep(0.1)
            assert "REF-1009" in listener.log and why in listener.log, listener.log
            assert listener.delivered == []

    asyncio.run(run())


def test_silence_is_refused_and_too_many_handshakes_are_not_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(peer_network, "HANDSHAKE_TIMEOUT_S", 0.3)

    async def run() -> None:
        async with Listener() as listener:
            idle = [await listener.connect() for _ in range(peer_network.MAX_HANDSHAKES + 3)]
            await asyncio.sleep(0.1)
            assert "too many handshakes at once" in listener.log
            await asyncio.sleep(0.5)
            assert "no hello in time" in listener.log
            for _, writer in idle:
                writer.close()
            _, writer, _ = await _member(listener, SECRET)  # and it still serves members
            writer.write(_STATUS)
            await asyncio.sleep(0.2)
            assert [p for p, _ in listener.delivered] == ["n2"]

    asyncio.run(run())


@pytest.mark.parametrize(
    ("hello", "code", "why"),
    [
        ({**HELLO, "node": "n9"}, "HA-1008", "Intruder detected : Node 'n9'"),
        ({**HELLO, "node": "n1"}, "HA-1008", "Intruder detected : Node 'n1'"),
        ({**HELLO, "group": "other"}, "HA-1008", "Intruder detected : Node 'n2'"),
        ({**HELLO, "node": "x" * 5000}, "HA-1008", "Intruder detected : Node '" + "x" * 64),
        ({**HELLO, "type": "status"}, "HA-1008", "Intruder detected"),
        (HELLO, "REF-1009", "no proof of the group secret offered"),
        ({**HELLO, "nonce": "zz"}, "REF-1009", "no proof of the group secret offered"),
        (
            {**HELLO, "nonce": "0" * 64, "timestamp": 10**400, "proof": "0" * 64},
            "REF-1009",
            "stale hello",
        ),
    ],
)
def test_a_hello_that_is_not_a_member_is_refused(
    hello: dict[str, Any], code: str, why: str
) -> None:
    async def run() -> None:
        async with Listener() as listener:
            await listener.send_raw(encode_message(hello) + _STATUS)
            assert code in listener.log and why in listener.log, listener.log
            assert "x" * 65 not in listener.log
            assert listener.delivered == []

    asyncio.run(run())


def test_another_groups_secret_and_a_replayed_handshake_are_refused() -> None:
    async def run() -> None:
        async with Listener() as listener:
            # a member of another group that happens to use this group's name and node names
            reader, writer, _ = await _member(listener, "another-group-secret-0123456789")
            writer.write(_STATUS)
            refusal, _ = await asyncio.wait_for(read_message(reader), 2)
            assert refusal == {
                "type": "refused",
                "code": 320,
                "text": "wrong proof of the group secret",
            }
            # a proper member's hello, recorded, then replayed byte for byte
            _, writer, recorded = await _member(listener, SECRET)
            writer.close()
            back = await listener.send_raw(recorded + _STATUS)
            assert b"replayed hello" in back and "replayed hello" in listener.log
            # and one recorded long ago (it is out of the replay cache's window)
            back = await listener.send_raw(_signed_hello(SECRET, at=time.time() - 120) + _STATUS)
            assert b"stale hello" in back and "stale hello (its clock is -120" in listener.log
            assert listener.log.count("wrong proof of the group secret") == 1
            assert listener.delivered == []

    asyncio.run(run())


# ---- a real node ---------------------------------------------------------------------------


def _send(port: int, count: int, prefix: str) -> None:
    conn = BlockingConnection(f"127.0.0.1:{port}", timeout=10)
    try:
        sender = conn.create_sender("q")
        for i in range(count):
            sender.send(Message(id=f"{prefix}-{i}", body=b"x", durable=True), timeout=10)
    finally:
        conn.close()


def _http(port: int, raw: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(raw)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def _post(path: str, body: bytes, headers: dict[str, str]) -> bytes:
    auth = base64.b64encode(b"admin:admin").decode()
    lines = [f"POST {path} HTTP/1.1", "Host: x"]
    lines += [f"{k}: {v}" for k, v in {"Authorization": f"Basic {auth}", **headers}.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _state(group: LocalGroup, name: str) -> dict[str, Any]:
    body = group.request(name)[1]
    keys = ("role", "term", "priority", "lastKnownReplicationTransactionId", "queues")
    return {k: body[k] for k in keys}


def _replicated(group: LocalGroup, master: str, depth: int) -> None:
    """Wait until every node holds `depth` messages and the master's last transaction."""

    def states() -> list[tuple[int, int]]:
        return [
            (_state(group, n)["queues"].get("q", {}).get("depth", 0), _txid(group, n))
            for n in group.configs
        ]

    until(states, lambda seen: len({*seen}) == 1 and seen[0][0] == depth)


def _txid(group: LocalGroup, name: str) -> int:
    return int(_state(group, name)["lastKnownReplicationTransactionId"])


@pytest.mark.processes
def test_a_node_under_hostile_input_changes_nothing_and_keeps_serving(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = make_group(3, all={"group_secret": SECRET})
    master = group.master()
    _send(group.ports[master][0], 10, "a")
    _replicated(group, master, 10)
    before = {n: _state(group, n) for n in group.configs}
    repl, mgmt = group.ports[master][2], group.ports[master][1]
    # a hello in the master's own name is an intruder's, refused before any proof is looked at
    member = next(n for n in group.configs if n != master)
    for data in (
        os.urandom(4096),
        struct.pack(">II", 50 * 1024 * 1024, 0),
        encode_message({**HELLO, "node": "n9"}) + _STATUS,
        encode_message({**HELLO, "group": "other"}) + _STATUS,
        encode_message({**HELLO, "node": member}) + _STATUS,
    ):
        with socket.create_connection(("127.0.0.1", repl), timeout=5) as sock:
            sock.sendall(data)
            time.sleep(0.1)
    path = f"/api/latest/virtualhostnode/{master}"
    change = json.dumps({"priority": 3}).encode()
    answers = {
        "oversized": _http(
            mgmt,
            _post(
                path, b"{" * 70000, {"Content-Length": "70000", "Content-Type": "application/json"}
            ),
        ),
        "form": _http(
            mgmt,
            _post(
                path,
                change,
                {
                    "Content-Length": str(len(change)),
                    "Content-Type": "text/plain",
                },
            ),
        ),
        "no type": _http(mgmt, _post(path, change, {"Content-Length": str(len(change))})),
        "chunked": _http(
            mgmt,
            _post(
                path,
                b"c\r\n" + change + b"\r\n0\r\n\r\n",
                {"Transfer-Encoding": "chunked", "Content-Type": "application/json"},
            ),
        ),
        "negative": _http(
            mgmt, _post(path, change, {"Content-Length": "-5", "Content-Type": "application/json"})
        ),
        "junk": _http(mgmt, os.urandom(300).replace(b"\n", b"") + b"\r\n\r\n"),
        "bad auth": _http(
            mgmt,
            _post(
                path,
                change,
                {
                    "Content-Length": str(len(change)),
                    "Content-Type": "application/json",
                    "Authorization": "Basic !!!",
                },
            ),
        ),
    }
    expected = {
        "oversized": b" 413 ",
        "form": b" 415 ",
        "no type": b" 415 ",
        "chunked": b" 411 ",
        "negative": b" 400 ",
        "junk": b" 400 ",
        "bad auth": b" 401 ",
    }
    for what, status in expected.items():
        # a request line it cannot read is answered the HTTP/0.9 way: a page, no status line
        head = answers[what][:20] if what != "junk" else answers[what]
        assert status in head or b"Error code: " + status.strip() in head, what
    after = {n: _state(group, n) for n in group.configs}
    assert after == before
    log = group.oplog(master)
    for why in (
        "REF-1009",
        "not a peer hello",
        "frame too large",
        "no proof of the group secret",
        "HA-1008",
        "REF-1010",
        " 413 ",
        " 415 ",
        " 411 ",
        " 401 ",
    ):
        assert why in log, why
    _send(group.ports[master][0], 5, "b")  # it keeps serving
    _replicated(group, master, 15)
    assert group.master() == master
