"""The group secret's handshake between nodes: the dialler proves itself in its hello and is
heard at once, the listener proves itself in its welcome, and a link whose way back is cut
still carries the dialler's frames (configuration, the lab's side and real groups:
test_peer_security_setup.py)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import struct
import time
from collections.abc import Callable
from typing import Any

import pytest

from broker_ref.config import parse_config
from broker_ref.oplog import OperationalLog
from broker_ref.peer_auth import (
    DIALLER,
    HOLD_LIMIT,
    LISTENER,
    AuthFailed,
    ListenerCheck,
    ReplayCache,
    accept,
    dial,
    new_nonce,
    proof,
)
from broker_ref.peer_network import PeerNetwork
from broker_ref.peer_wire import read_message, write_message

SECRET = "a" * 32
OTHER = "b" * 32
HELLO = {"type": "hello", "group": "lab", "node": "n2", "mechanism": "ANONYMOUS"}


def test_a_proof_depends_on_role_secret_group_names_and_both_nonces() -> None:
    nd, ns = new_nonce(), new_nonce()
    base = proof(SECRET, DIALLER, "lab", "n2", "n1", nd, ns)
    assert len(base) == 64 and base == proof(SECRET, DIALLER, "lab", "n2", "n1", nd, ns)
    variants = [
        proof(SECRET, LISTENER, "lab", "n2", "n1", nd, ns),
        proof(OTHER, DIALLER, "lab", "n2", "n1", nd, ns),
        proof(SECRET, DIALLER, "other", "n2", "n1", nd, ns),
        proof(SECRET, DIALLER, "lab", "n3", "n1", nd, ns),
        proof(SECRET, DIALLER, "lab", "n2", "n1", new_nonce(), ns),
        proof(SECRET, DIALLER, "lab", "n2", "n1", nd, new_nonce()),
    ]
    assert base not in variants and len(set(variants)) == len(variants)


NOW = 1_700_000_000.0


def _hello(
    secret: str = SECRET, clock: Callable[[], float] = lambda: NOW, to: str = "n1"
) -> tuple[dict[str, Any], ListenerCheck]:
    """The hello n2 sends n1 (as bytes on the wire would carry it) and n2's check of n1."""
    sink = _Sink()
    check = dial(sink, secret, dict(HELLO), to, clock)  # type: ignore[arg-type]
    return sink.headers()[0], check


class _Sink:
    """A writer that keeps what is written."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data.extend(data)

    def headers(self) -> list[dict[str, Any]]:
        out, at = [], 0
        while at < len(self.data):
            head, body = struct.unpack(">II", self.data[at : at + 8])
            out.append(json.loads(self.data[at + 8 : at + 8 + head]))
            at += 8 + head + body
        return out


def _accept(
    hello: dict[str, Any], cache: ReplayCache | None = None, secret: str = SECRET, at: float = NOW
) -> dict[str, Any] | None:
    replays = cache if cache is not None else ReplayCache()
    return accept(secret, "lab", "n1", hello, replays, lambda: at)


def test_the_dialler_proves_itself_in_its_hello_and_the_secret_never_crosses_the_wire() -> None:
    hello, check = _hello()
    assert {"nonce", "timestamp", "proof"} <= hello.keys() and hello["to"] == "n1"
    assert hello["timestamp"] == int(NOW * 1000) and SECRET not in json.dumps(hello)
    expected = proof(SECRET, DIALLER, "lab", "n2", "n1", hello["nonce"], str(hello["timestamp"]))
    assert hello["proof"] == expected
    welcome = _accept(hello)
    assert welcome is not None and welcome["type"] == "welcome" and welcome["node"] == "n1"
    assert SECRET not in json.dumps(welcome) and not check.verified
    assert check.take(welcome, b"") == [] and check.verified


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"proof": proof(OTHER, DIALLER, "lab", "n2", "n1", "0" * 64, "1")}, "wrong proof"),
        ({"node": "n3"}, "wrong proof"),  # a proof made by n2 does not pass for n3
        ({"timestamp": int(NOW * 1000) + 1}, "wrong proof"),  # the timestamp is signed
        ({"to": "n3"}, "hello made for another node"),
        ({"proof": None}, "no proof of the group secret offered"),
        ({"timestamp": str(int(NOW * 1000))}, "no proof of the group secret offered"),
        ({"timestamp": True}, "no proof of the group secret offered"),
        ({"nonce": "ab"}, "no proof of the group secret offered"),
    ],
)
def test_a_hello_with_a_wrong_or_missing_proof_is_refused(change: dict[str, Any], why: str) -> None:
    hello, _ = _hello()
    with pytest.raises(AuthFailed, match=why):
        _accept({**hello, **change})


def test_a_hello_made_with_another_secret_is_refused() -> None:
    hello, _ = _hello(OTHER)
    with pytest.raises(AuthFailed, match="wrong proof of the group secret"):
        _accept(hello)
    assert _accept(hello, secret=OTHER) is not None  # the control: its own group takes it


def test_a_replayed_hello_is_refused() -> None:
    cache = ReplayCache()
    hello, _ = _hello()
    assert _accept(hello, cache) is not None
    with pytest.raises(AuthFailed, match="replayed hello"):
        _accept(hello, cache, at=NOW + 30)
    assert _accept(_hello()[0], cache) is not None  # a fresh hello of the same node passes


@pytest.mark.parametrize("off_s", [-61.0, 61.0, -3600.0])
def test_a_hello_outside_the_window_is_refused(off_s: float) -> None:
    hello, _ = _hello(clock=lambda: NOW + off_s)
    with pytest.raises(
        AuthFailed, match=re.escape(f"stale hello (its clock is {off_s:+.1f} s off)")
    ):
        _accept(hello)
    hello, _ = _hello(clock=lambda: NOW + (59.0 if off_s > 0 else -59.0))  # the control
    assert _accept(hello) is not None


def test_the_replay_cache_is_bounded_and_never_forgets_into_a_replay() -> None:
    cache = ReplayCache(window_s=60, capacity=3)
    now = 1_000_000
    for i in range(3):
        assert cache.admit(f"n{i}", now + i, now)
    assert cache.admit("n3", now + 3, now) and len(cache) == 3  # forgot n0 ...
    assert not cache.admit("n0", now, now)  # ... and still refuses it (the floor)
    assert not cache.admit("n1", now + 1, now)  # remembered
    assert cache.admit("n4", now + 70_000, now + 70_000) and len(cache) == 1  # old ones expire


def test_the_dialler_holds_the_listeners_frames_until_its_proof_verifies() -> None:
    hello, check = _hello()
    welcome = _accept(hello)
    assert welcome is not None
    status = {"type": "status", "term": 3}
    assert check.take(status, b"p") == [] and not check.verified
    assert check.take(welcome, b"") == [(status, b"p")] and check.verified
    assert check.take(status, b"q") == [(status, b"q")]
    for wrong in (
        {**welcome, "proof": proof(OTHER, LISTENER, "lab", "n2", "n1", hello["nonce"], "x")},
        {**welcome, "node": "n3"},
        {**welcome, "nonce": new_nonce()},  # a welcome made for another connection
        {"type": "welcome"},
    ):
        _, other = _hello()
        other.take(status, b"")
        with pytest.raises(AuthFailed, match="did not prove the group secret"):
            other.take(wrong, b"")
    _, flood = _hello()
    with pytest.raises(AuthFailed, match="sent too much"):
        for _ in range(HOLD_LIMIT + 1):
            flood.take(status, b"")


def test_without_a_secret_nothing_is_proved_or_held() -> None:
    hello, check = _hello("")
    assert hello == HELLO and check.verified
    assert _accept(hello, secret="") is None


def _network(name: str, peer: str, port: int, secret: str = SECRET) -> tuple[PeerNetwork, Any]:
    raw = {
        "name": name,
        "amqp_port": 1,
        "management_port": 2,
        "data_dir": "d",
        "replication_port": 3,
        "peers": {peer: f"127.0.0.1:{port}"},
        "group_secret": secret,
    }
    out = io.StringIO()
    got: list[tuple[str, dict[str, Any]]] = []
    net = PeerNetwork(
        parse_config(raw), OperationalLog(name, out), lambda p, h, _: got.append((p, h))
    )
    return net, (got, out)


async def _until_async(test: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not test():
        await asyncio.sleep(0.02)
    return test()


def test_the_listener_reads_the_dialler_frames_before_it_proves_itself() -> None:
    """A dialler that never reads what comes back is heard at once."""

    async def run() -> None:
        listener, (got, log) = _network("n1", "n2", 9)
        server = await asyncio.start_server(listener.serve, "127.0.0.1", 0)
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.sockets[0].getsockname()[1]
        )
        dial(writer, SECRET, dict(HELLO), "n1")
        write_message(writer, {"type": "status", "term": 4})
        assert await _until_async(lambda: got == [("n2", {"type": "status", "term": 4})])
        welcome, _ = await asyncio.wait_for(read_message(reader), 2)  # it was sent, unread
        assert welcome["type"] == "welcome" and "REF-1009" not in log.getvalue()
        writer.close()
        listener.stop()
        server.close()

    asyncio.run(run())


Answer = Callable[[dict[str, Any]], dict[str, Any] | None]


async def _fake_listener(answer: Answer, seen: list[dict[str, Any]]) -> Any:
    """A node n1 that reads n2's hello, sends a status, waits, then sends the answer it
    makes of the hello; it keeps what n2 sends next in `seen`."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hello, _ = await read_message(reader)
        write_message(writer, {"type": "status", "term": 7})
        await asyncio.sleep(0.3)
        write_message(writer, answer(hello) or {})
        with contextlib.suppress(OSError, ValueError, asyncio.IncompleteReadError):
            while True:
                seen.append((await read_message(reader))[0])

    return await asyncio.start_server(serve, "127.0.0.1", 0)


@pytest.mark.parametrize("secret", [SECRET, OTHER])
def test_the_dialling_node_hands_on_the_listeners_frames_only_after_its_proof(secret: str) -> None:
    async def run() -> None:
        seen: list[dict[str, Any]] = []

        def made(hello: dict[str, Any]) -> dict[str, Any] | None:
            nl = new_nonce()  # a welcome made with `secret`, whatever n2's proof was
            mine = proof(secret, LISTENER, "lab", "n2", "n1", hello["nonce"], nl)
            return {"type": "welcome", "node": "n1", "nonce": nl, "proof": mine}

        server = await _fake_listener(made, seen)
        dialler, (got, log) = _network("n2", "n1", server.sockets[0].getsockname()[1])
        await dialler.start()
        await asyncio.sleep(0.2)
        assert got == [] and dialler.connected("n1")  # held; and n2 sends meanwhile
        if secret == SECRET:
            assert await _until_async(lambda: got == [("n1", {"type": "status", "term": 7})])
        else:  # a listener that cannot prove the secret: nothing it sent is handed on
            assert await _until_async(lambda: "did not prove the group secret" in log.getvalue())
            assert got == [] and "REF-1009" in log.getvalue()
            assert await _until_async(lambda: any(h.get("type") == "refused" for h in seen))
        dialler.stop()
        server.close()

    asyncio.run(run())


def test_a_link_whose_way_back_is_cut_carries_the_dialler_frames() -> None:
    """n2 dials n1 through a relay that drops everything n1 sends back (its welcome too):
    n1 hears everything n2 sends, as a one-way partition's good direction must."""

    async def run() -> None:
        listener, (got, log) = _network("n1", "n2", 9)
        server = await asyncio.start_server(listener.serve, "127.0.0.1", 0)
        target = server.sockets[0].getsockname()[1]
        dropped = bytearray()

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter | None) -> None:
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    if dst is None:
                        dropped.extend(data)
                    else:
                        dst.write(data)

        async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, None))

        proxy = await asyncio.start_server(relay, "127.0.0.1", 0)
        dialler, (back, dialler_log) = _network("n2", "n1", proxy.sockets[0].getsockname()[1])
        await dialler.start()
        assert await _until_async(lambda: dialler.connected("n1"))
        for term in range(1, 6):
            assert dialler.send("n1", {"type": "status", "term": term})
        assert await _until_async(lambda: len(got) == 5)
        assert [h["term"] for _, h in got] == [1, 2, 3, 4, 5]
        assert b'"welcome"' in dropped and back == []  # n1 answered; n2 never heard it
        assert "REF-1009" not in log.getvalue() + dialler_log.getvalue()
        dialler.stop()
        listener.stop()
        proxy.close()
        server.close()

    asyncio.run(run())
