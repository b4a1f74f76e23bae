"""What broker_ref's peer security costs on this machine: the time of one peer handshake
(TCP connect + hello, with the group secret's proofs, with mutual TLS too) and
the throughput of one peer link with and without TLS.

    .venv/bin/python scripts/peer_security_cost.py [--handshakes 200] [--megabytes 200]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import tempfile
import time
from pathlib import Path

from broker_ref.config import NodeConfig, parse_config
from broker_ref.oplog import OperationalLog
from broker_ref.peer_network import PeerNetwork
from broker_ref.peer_wire import encode_message
from broker_ref.tls import peer_client_context
from lab.targets.broker_ref_security import tls_files

SECRET = "s" * 64


def _config(name: str, peer: str, port: int, secret: str, tls: Path | None) -> NodeConfig:
    raw = {
        "name": name,
        "amqp_port": 1,
        "management_port": 2,
        "data_dir": "d",
        "replication_port": 3,
        "peers": {peer: f"127.0.0.1:{port}"},
        "group_secret": secret,
    }
    if tls is not None:
        raw.update(replication_tls=True, **tls_files(tls, name).config())
    return parse_config(raw)


async def _handshakes(count: int, secret: str, tls: Path | None) -> list[float]:
    """Each handshake's time: n2 dials n1 until n1 has read its first message."""
    got: asyncio.Queue[None] = asyncio.Queue()
    listener = PeerNetwork(
        _config("n1", "n2", 9, secret, tls),
        OperationalLog("n1", io.StringIO()),
        lambda *_: got.put_nowait(None),
    )
    server = await asyncio.start_server(listener.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    dialler = PeerNetwork(
        _config("n2", "n1", port, secret, tls), OperationalLog("n2", io.StringIO()), print
    )
    times = []
    for _ in range(count):
        start = time.perf_counter()
        connection = await dialler._connect("n1", "127.0.0.1", port)
        assert connection is not None
        _, writer, _ = connection
        writer.write(encode_message({"type": "status", "term": 1}))
        await got.get()
        times.append(time.perf_counter() - start)
        writer.close()
    server.close()
    listener.stop()
    return times


async def _throughput(megabytes: int, tls: Path | None) -> float:
    """MB/s of 64 KiB appends over one peer link (after its handshake)."""
    total = 0
    done = asyncio.Event()
    target = megabytes * 1024 * 1024

    def on_message(peer: str, header: object, payload: bytes) -> None:
        nonlocal total
        total += len(payload)
        if total >= target:
            done.set()

    listener = PeerNetwork(
        _config("n1", "n2", 9, SECRET, tls), OperationalLog("n1", io.StringIO()), on_message
    )
    server = await asyncio.start_server(listener.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    dialler = PeerNetwork(
        _config("n2", "n1", port, SECRET, tls), OperationalLog("n2", io.StringIO()), print
    )
    connection = await dialler._connect("n1", "127.0.0.1", port)
    assert connection is not None
    _, writer, _ = connection
    frame = encode_message({"type": "append", "term": 1, "first": 1}, b"x" * 65536)
    start = time.perf_counter()
    sent = 0
    while sent < target:
        writer.write(frame)
        sent += 65536
        await writer.drain()
    await done.wait()
    elapsed = time.perf_counter() - start
    writer.close()
    server.close()
    listener.stop()
    return megabytes / elapsed


def _ms(times: list[float]) -> str:
    p90 = sorted(times)[int(len(times) * 0.9)]
    return f"median {statistics.median(times) * 1000:.2f} ms, p90 {p90 * 1000:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--handshakes", type=int, default=200)
    parser.add_argument("--megabytes", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        certs = Path(tmp)
        start = time.perf_counter()
        tls_files(certs, "n1"), tls_files(certs, "n2")
        print(f"run CA + 2 certificates: {(time.perf_counter() - start) * 1000:.0f} ms")
        assert peer_client_context(_config("n2", "n1", 9, SECRET, certs)) is not None
        for label, secret, tls in (
            ("plain hello", "", None),
            ("group secret", SECRET, None),
            ("group secret + mutual TLS", SECRET, certs),
        ):
            times = asyncio.run(_handshakes(args.handshakes, secret, tls))
            print(f"handshake, {label}: {_ms(times)} ({args.handshakes} handshakes)")
        for label, tls in (("group secret", None), ("group secret + mutual TLS", certs)):
            rate = asyncio.run(_throughput(args.megabytes, tls))
            print(
                f"one peer link, {label}: {rate:.0f} MB/s ({args.megabytes} MB of 64 KiB appends)"
            )


if __name__ == "__main__":
    main()
