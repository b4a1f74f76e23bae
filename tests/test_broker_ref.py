"""broker_ref: unit tests of its parts, and integration tests against the real node process."""

from __future__ import annotations

import base64
import errno
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from proton import ConnectionException, Delivery, Message
from proton.reactor import Container
from proton.utils import BlockingConnection

from broker_ref.amqp_server import AmqpServer
from broker_ref.commit import GroupCommit
from broker_ref.config import NodeConfig, load_config, parse_config
from broker_ref.errors import ConfigError, StoreError
from broker_ref.log_store import LOG_FILE_NAME, MAGIC, LogStore
from broker_ref.message_codec import delivery_count, mark_redelivered
from broker_ref.oplog import Code, OperationalLog, format_line
from broker_ref.queues import Queue, QueueBook, QueuedMessage
from broker_ref.records import Declare, Dequeue, Enqueue, decode_payload, encode_frame
from broker_ref.roles import Role, RoleTracker

OPLOG_LINE = re.compile(r"^(\S+) (\w+) \[(\S+)\] ([A-Z]+-\d{4}) : (.*)$")
REPO = Path(__file__).resolve().parent.parent


# ---- unit tests: records and the log store ------------------------------------------------------


def _records() -> list[Declare | Enqueue | Dequeue]:
    return [
        Declare(1, "q"),
        Enqueue(2, "q", 1, b"one"),
        Enqueue(3, "q", 2, b"two"),
        Dequeue(4, "q", 1),
        Declare(5, "other-é"),
        Enqueue(6, "other-é", 1, b""),
    ]


def test_every_record_kind_survives_encoding() -> None:
    for record in _records():
        frame = encode_frame(record)
        assert decode_payload(frame[8:]) == record


def test_log_store_reads_back_what_was_synced(tmp_path: Path) -> None:
    store, recovery = LogStore.open(tmp_path)
    assert recovery.records == () and recovery.torn_tail is None
    for record in _records():
        store.append(record)
    assert store.durable_txid == 0 and store.has_unsynced
    assert store.sync() == 6
    store.close()
    store, recovery = LogStore.open(tmp_path)
    assert list(recovery.records) == _records()
    assert recovery.torn_tail is None
    assert store.next_txid == 7 and store.durable_txid == 6
    store.close()


def test_log_store_refuses_a_txid_that_does_not_rise(tmp_path: Path) -> None:
    store, _ = LogStore.open(tmp_path)
    store.append(Declare(1, "q"))
    with pytest.raises(StoreError, match="does not follow"):
        store.append(Declare(1, "q"))
    store.close()


def _write_log(tmp_path: Path) -> bytes:
    store, _ = LogStore.open(tmp_path)
    for record in _records():
        store.append(record)
    store.close()
    return (tmp_path / LOG_FILE_NAME).read_bytes()


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda log: log + b"\x00\x00\x00\x05crc!garbage", "CRC mismatch"),
        (lambda log: log + b"\x00\x00", "frame header cut short"),
        (lambda log: log[:-3], "frame runs past the end"),
        (lambda log: log[:-1] + bytes([log[-1] ^ 0xFF]), "CRC mismatch"),
        (lambda log: log + b"\xff\xff\xff\xff\x00\x00\x00\x00", "frame runs past the end"),
    ],
    ids=["garbage", "partial-header", "partial-frame", "flipped-bit", "huge-length"],
)
def test_torn_tail_is_cut_at_the_last_complete_record(
    tmp_path: Path, damage: Callable[[bytes], bytes], reason: str
) -> None:
    log = _write_log(tmp_path)
    damaged = damage(log)
    (tmp_path / LOG_FILE_NAME).write_bytes(damaged)
    store, recovery = LogStore.open(tmp_path)
    assert recovery.torn_tail is not None
    assert reason in recovery.torn_tail.reason
    kept = len(_records()) if len(damaged) > len(log) else len(_records()) - 1
    assert list(recovery.records) == _records()[:kept]
    store.append(Enqueue(store.next_txid, "q", 9, b"after"))
    store.close()
    store, recovery = LogStore.open(tmp_path)
    assert recovery.torn_tail is None
    assert recovery.records[-1] == Enqueue(kept + 1, "q", 9, b"after")
    store.close()


def test_log_store_keeps_one_node_per_data_dir(tmp_path: Path) -> None:
    store, _ = LogStore.open(tmp_path)
    with pytest.raises(StoreError, match="in use"):
        LogStore.open(tmp_path)
    store.close()
    LogStore.open(tmp_path)[0].close()


def test_log_store_refuses_a_file_that_is_not_a_log(tmp_path: Path) -> None:
    (tmp_path / LOG_FILE_NAME).write_bytes(b"something else entirely")
    with pytest.raises(StoreError, match="not a broker_ref log"):
        LogStore.open(tmp_path)


def test_log_store_recreates_a_log_whose_header_was_torn(tmp_path: Path) -> None:
    (tmp_path / LOG_FILE_NAME).write_bytes(MAGIC[:3])
    store, recovery = LogStore.open(tmp_path)
    assert recovery.records == ()
    assert recovery.torn_tail is not None and recovery.torn_tail.dropped_bytes == 3
    store.close()
    assert (tmp_path / LOG_FILE_NAME).read_bytes() == MAGIC


def test_a_failed_write_is_continued_by_the_next_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = LogStore.open(tmp_path)
    real_write = os.write
    calls: list[int] = []

    def half_then_disk_full(fd: int, data: Any) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data)[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    for record in _records():
        store.append(record)
    monkeypatch.setattr(os, "write", half_then_disk_full)
    with pytest.raises(StoreError, match="No space left"):
        store.sync()
    assert store.durable_txid == 0 and store.has_unsynced
    monkeypatch.setattr(os, "write", real_write)
    assert store.sync() == 6
    store.close()
    store, recovery = LogStore.open(tmp_path)
    assert list(recovery.records) == _records() and recovery.torn_tail is None
    store.close()


def test_group_commit_makes_a_batch_durable_with_one_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs: list[int] = []
    real_fdatasync = os.fdatasync

    def counting_fdatasync(fd: int) -> None:
        syncs.append(fd)
        real_fdatasync(fd)

    monkeypatch.setattr(os, "fdatasync", counting_fdatasync)
    store, _ = LogStore.open(tmp_path)
    commit: GroupCommit[str] = GroupCommit(store, coalescing=True)
    commit.stage(Declare(commit.next_txid, "q"))
    for seq in range(1, 11):
        commit.stage(Enqueue(commit.next_txid, "q", seq, b"m"), f"waiter-{seq}")
    assert store.durable_txid == 0
    committed = commit.commit()
    assert len(syncs) == 1
    assert [waiter for _, waiter in committed] == [None] + [f"waiter-{s}" for s in range(1, 11)]
    assert store.durable_txid == 11 and not commit.pending
    assert commit.commit() == [] and len(syncs) == 1
    store.close()


# ---- unit tests: queues -----------------------------------------------------------------------


def test_queue_hands_out_in_order_and_takes_returns_in_front() -> None:
    queue = Queue("q")
    for seq in range(1, 6):
        queue.push(QueuedMessage(queue.allocate_seq(), f"m{seq}".encode()))
    first, second, third = queue.take(), queue.take(), queue.take()
    assert first and second and third and queue.unacked == 3 and queue.depth == 2
    queue.give_back(third)
    queue.acknowledge(second)
    queue.give_back(first)
    assert [m.seq for m in queue.waiting()] == [1, 3, 4, 5]
    assert queue.depth == 4 and queue.unacked == 0
    assert [m.seq for m in iter(queue.take, None)] == [1, 3, 4, 5]
    assert not queue.has_waiting


def test_queue_book_recovers_declared_queues_and_live_messages() -> None:
    book = QueueBook.recover(
        [
            Declare(1, "empty"),
            Declare(2, "q"),
            Enqueue(3, "q", 1, b"a"),
            Enqueue(4, "q", 2, b"b"),
            Enqueue(5, "q", 3, b"c"),
            Dequeue(6, "q", 2),
        ]
    )
    stats = book.stats()
    assert {name: (s.depth, s.unacked) for name, s in stats.items()} == {
        "empty": (0, 0),
        "q": (2, 0),
    }
    queue = book.get("q")
    assert queue is not None
    assert [(m.seq, m.body) for m in queue.waiting()] == [(1, b"a"), (3, b"c")]
    assert queue.allocate_seq() == 4
    assert book.message_count == 2


# ---- unit tests: config, operational log, roles, message codec ----------------------------------


def test_config_defaults_and_relative_data_dir(tmp_path: Path) -> None:
    path = tmp_path / "n1.json"
    path.write_text(
        json.dumps({"name": "n1", "amqp_port": 5672, "management_port": 8080, "data_dir": "d"})
    )
    assert load_config(path) == NodeConfig(
        name="n1",
        amqp_port=5672,
        management_port=8080,
        data_dir=tmp_path / "d",
        group="lab",
        host="127.0.0.1",
        coalescing_sync=True,
        idle_timeout_s=2.0,
        permitted_nodes=("n1",),
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "red"}, "unknown key 'colour'"),
        ({"name": None}, "'name' must be a non-empty string"),
        ({"name": "two words"}, "no spaces"),
        ({"amqp_port": "5672"}, "'amqp_port' must be a port number"),
        ({"management_port": 70000}, "'management_port' must be a port number"),
        ({"coalescing_sync": 1}, "'coalescing_sync' must be true or false"),
        ({"idle_timeout_s": -1}, "'idle_timeout_s' must be a number"),
        ({"management_port": 5672}, "are both 5672"),
    ],
)
def test_config_errors_name_the_key(change: dict[str, Any], message: str) -> None:
    raw = {"name": "n1", "amqp_port": 5672, "management_port": 8080, "data_dir": "/d"} | change
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(raw)


def test_config_requires_its_four_keys() -> None:
    with pytest.raises(ConfigError, match="missing required key 'data_dir'"):
        parse_config({"name": "n1", "amqp_port": 1, "management_port": 2})


class _Lines:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


def test_oplog_lines_match_the_labs_pattern() -> None:
    out = _Lines()
    when = datetime(2026, 11, 21, 16, 0, 0, 123456, tzinfo=UTC)
    log = OperationalLog("n1", out, clock=lambda: when)  # type: ignore[arg-type]
    RoleTracker("n1", log).change(Role.MASTER)
    log.warn(Code.LOG_TAIL_TRUNCATED, "two\nlines")
    lines = out.text.splitlines()
    assert lines == [
        "2026-11-21T16:00:00.123Z INFO [n1] HA-1010 : Role change reported: Node : 'n1'"
        " : from 'WAITING' to 'MASTER'",
        "2026-11-21T16:00:00.123Z WARN [n1] REF-1001 : two lines",
    ]
    assert all(OPLOG_LINE.match(line) for line in lines)
    assert OPLOG_LINE.match(format_line(when, "INFO", "n1", "MST-1001", "Created"))


def test_a_redelivery_adds_one_to_the_delivery_count() -> None:
    body = bytes(Message(id="m1", body="x", durable=True).encode())
    again = mark_redelivered(mark_redelivered(body))
    assert delivery_count(body) == 0 and delivery_count(again) == 2
    decoded = Message()
    decoded.decode(again)
    assert decoded.id == "m1" and decoded.body == "x" and decoded.durable


# ---- the AMQP server in this process ----------------------------------------------------------


def test_a_node_that_is_not_master_turns_clients_away(tmp_path: Path) -> None:
    store, _ = LogStore.open(tmp_path)
    oplog = OperationalLog("n1", _Lines())  # type: ignore[arg-type]
    roles = RoleTracker("n1", oplog)
    container = Container()
    port = _free_port()
    stop = threading.Event()
    server = AmqpServer(
        container=container,
        acceptor=container.acceptor("127.0.0.1", str(port)),
        node="n1",
        idle_timeout_s=0,
        queues=QueueBook(),
        commit=GroupCommit[Delivery](store, coalescing=True),
        roles=roles,
        oplog=oplog,
        shutdown_requested=stop.is_set,
    )
    container.handler.add(server)
    reactor = threading.Thread(target=container.run, daemon=True)
    reactor.start()
    try:
        assert roles.current is Role.WAITING
        with pytest.raises(ConnectionException) as refused:
            BlockingConnection(f"127.0.0.1:{port}", timeout=5).create_sender("q")
        assert "amqp:connection:forced" in str(refused.value)
        assert "not the master" in str(refused.value)
    finally:
        stop.set()
        reactor.join(10)
        store.close()
    assert not reactor.is_alive()


# ---- integration: the node as a process -------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class NodeProcess:
    """One running `python -m broker_ref` and the files it writes."""

    dir: Path
    config: dict[str, Any]
    proc: subprocess.Popen[bytes] | None = None
    starts: int = field(default=0)

    @property
    def url(self) -> str:
        return f"127.0.0.1:{self.config['amqp_port']}"

    @property
    def log_path(self) -> Path:
        return self.dir / "data" / LOG_FILE_NAME

    def stdout(self) -> str:
        return "".join(p.read_text() for p in sorted(self.dir.glob("stdout-*.log")))

    def stderr(self) -> str:
        return "".join(p.read_text() for p in sorted(self.dir.glob("stderr-*.log")))

    def oplog(self) -> list[tuple[str, str, str]]:
        """(level, code, text) of every operational log line so far, in order."""
        found = []
        for line in self.stdout().splitlines():
            match = OPLOG_LINE.match(line)
            assert match, f"not an operational log line: {line!r}"
            assert match.group(3) == self.config["name"]
            found.append((match.group(2), match.group(4), match.group(5)))
        return found

    def start(self) -> None:
        self.starts += 1
        config_path = self.dir / "config.json"
        config_path.write_text(json.dumps(self.config))
        with (
            open(self.dir / f"stdout-{self.starts}.log", "wb") as out,
            open(self.dir / f"stderr-{self.starts}.log", "wb") as err,
        ):
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "broker_ref", "--config", str(config_path)],
                stdout=out,
                stderr=err,
                cwd=REPO,
            )

    def wait_ready(self, timeout_s: float = 15.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"node exited {self.proc.returncode}: {self.stderr()}")
            try:
                if self.get("/health")[1].get("role") == "MASTER":
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"node not MASTER after {timeout_s}s: {self.stderr()}")

    def get(self, path: str, auth: str = "admin:admin") -> tuple[int, dict[str, Any]]:
        url = f"http://127.0.0.1:{self.config['management_port']}{path}"
        request = urllib.request.Request(url)
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def queue(self, name: str) -> dict[str, int]:
        queues: dict[str, dict[str, int]] = self.get("/api/latest/virtualhostnode/n1")[1]["queues"]
        return queues[name]

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 10.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout_s)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


NodeFactory = Callable[..., NodeProcess]


@pytest.fixture
def start_node(tmp_path: Path) -> Iterator[NodeFactory]:
    """Starts nodes on free ports in tmp_path; every one is killed when the test ends."""
    nodes: list[NodeProcess] = []

    def start(**overrides: Any) -> NodeProcess:
        folder = tmp_path / f"node{len(nodes) + 1}"
        folder.mkdir()
        for _attempt in range(3):
            config = {
                "name": "n1",
                "group": "lab",
                "amqp_port": _free_port(),
                "management_port": _free_port(),
                "data_dir": str(folder / "data"),
                "idle_timeout_s": 2.0,
            } | overrides
            node = NodeProcess(folder, config)
            nodes.append(node)
            node.start()
            try:
                node.wait_ready()
                return node
            except AssertionError:
                if "in use" not in node.stderr():
                    raise
        raise AssertionError("no free ports after 3 attempts")

    yield start
    for node in nodes:
        node.kill()


def _send(url: str, address: str, ids: list[str]) -> list[str]:
    """Send each message and return the remote outcome of each, by name."""
    connection = BlockingConnection(url, timeout=10)
    try:
        sender = connection.create_sender(address)
        outcomes = [sender.send(Message(id=i, body=f"body of {i}")).remote_state for i in ids]
        return ["ACCEPTED" if o == Delivery.ACCEPTED else str(o) for o in outcomes]
    finally:
        connection.close()


def _receive_all(url: str, address: str, *, accept: bool = True) -> list[Message]:
    """Receive until the queue has been empty for half a second."""
    connection = BlockingConnection(url, timeout=10)
    received = []
    try:
        receiver = connection.create_receiver(address, credit=50)
        while True:
            try:
                message = receiver.receive(timeout=0.5)
            except Exception:  # proton.Timeout: nothing more
                break
            received.append(message)
            if accept:
                receiver.accept()
    finally:
        connection.close()
    return received


@pytest.mark.processes
def test_send_is_accepted_and_receive_accept_empties_the_queue(start_node: NodeFactory) -> None:
    node = start_node()
    ids = [f"m{i}" for i in range(20)]
    assert _send(node.url, "orders", ids) == ["ACCEPTED"] * 20
    assert node.queue("orders") == {"depth": 20, "unacked": 0}
    received = _receive_all(node.url, "orders")
    assert [m.id for m in received] == ids
    assert [m.body for m in received] == [f"body of {i}" for i in ids]
    assert all(m.delivery_count == 0 for m in received)
    assert node.queue("orders") == {"depth": 0, "unacked": 0}


@pytest.mark.processes
def test_without_coalescing_every_message_is_still_accepted(start_node: NodeFactory) -> None:
    node = start_node(coalescing_sync=False)
    ids = [f"m{i}" for i in range(10)]
    assert _send(node.url, "q", ids) == ["ACCEPTED"] * 10
    assert [m.id for m in _receive_all(node.url, "q")] == ids


@pytest.mark.processes
def test_restart_after_sigkill_recovers_every_accepted_message(start_node: NodeFactory) -> None:
    node = start_node()
    ids = [f"m{i}" for i in range(50)]
    assert _send(node.url, "q", ids) == ["ACCEPTED"] * 50
    connection = BlockingConnection(node.url, timeout=10)
    receiver = connection.create_receiver("q", credit=10)
    for _ in range(10):
        receiver.receive(timeout=5)
        receiver.accept()
    connection.close()
    time.sleep(0.2)
    node.stop(signal.SIGKILL)
    node.start()
    node.wait_ready()
    assert ("INFO", "MST-1005", "Recovered 40 messages") in node.oplog()
    assert node.get("/api/latest/virtualhostnode/n1")[1]["lastKnownReplicationTransactionId"] == 61
    assert [m.id for m in _receive_all(node.url, "q")] == ids[10:]


@pytest.mark.processes
def test_unsettled_message_comes_back_redelivered_when_its_consumer_goes(
    start_node: NodeFactory,
) -> None:
    node = start_node()
    _send(node.url, "q", ["a", "b", "c"])
    connection = BlockingConnection(node.url, timeout=10)
    receiver = connection.create_receiver("q", credit=1)
    assert receiver.receive(timeout=5).id == "a"
    # The blocking receiver tops its credit up as soon as "a" arrives, so "b" may be
    # handed out too, and come back redelivered with "a".
    assert node.queue("q")["unacked"] >= 1
    connection.close()
    received = _receive_all(node.url, "q")
    assert [m.id for m in received] == ["a", "b", "c"]
    assert received[0].delivery_count == 1 and received[2].delivery_count == 0
    assert node.queue("q") == {"depth": 0, "unacked": 0}


@pytest.mark.processes
def test_released_message_waits_again_in_front(start_node: NodeFactory) -> None:
    node = start_node()
    _send(node.url, "q", ["a", "b"])
    connection = BlockingConnection(node.url, timeout=10)
    receiver = connection.create_receiver("q", credit=1)
    assert receiver.receive(timeout=5).id == "a"
    receiver.release(delivered=False)
    # "b" was handed out when the receiver topped its credit up after "a".
    assert receiver.receive(timeout=5).id == "b"
    receiver.accept()
    again = receiver.receive(timeout=5)
    assert (again.id, again.delivery_count) == ("a", 0)
    receiver.reject()
    connection.close()
    assert node.queue("q") == {"depth": 0, "unacked": 0}


@pytest.mark.processes
def test_a_silent_consumer_times_out_and_its_message_is_redelivered(
    start_node: NodeFactory,
) -> None:
    node = start_node(idle_timeout_s=1.0)
    _send(node.url, "q", ["a"])
    silent = BlockingConnection(node.url, timeout=10)
    assert silent.create_receiver("q", credit=1).receive(timeout=5).id == "a"
    # `silent` processes no I/O from here on, so it sends no heartbeats.
    time.sleep(2.5)
    received = _receive_all(node.url, "q")
    assert [(m.id, m.delivery_count) for m in received] == [("a", 1)]
    assert any(code == "CON-1002" for _, code, _ in node.oplog())


@pytest.mark.processes
@pytest.mark.parametrize("waiting", [0, 3])
def test_drain_completes_when_the_queue_runs_out(start_node: NodeFactory, waiting: int) -> None:
    node = start_node()
    _send(node.url, "q", [f"m{i}" for i in range(waiting)])
    connection = BlockingConnection(node.url, timeout=10)
    receiver = connection.create_receiver("q", credit=0)
    link = receiver.link
    link.drain(10)
    connection.wait(lambda: link.credit == 0 and not link.draining(), timeout=5, msg="drain")
    got = [receiver.receive(timeout=1).id for _ in range(waiting)]
    assert got == [f"m{i}" for i in range(waiting)]
    connection.close()


@pytest.mark.processes
def test_management_api_reports_health_and_the_virtualhostnode(start_node: NodeFactory) -> None:
    node = start_node(group="weather")
    _send(node.url, "q", ["a", "b"])
    assert node.get("/health") == (200, {"status": "ok", "name": "n1", "role": "MASTER"})
    status, body = node.get("/api/latest/virtualhostnode/n1")
    assert status == 200
    assert body["name"] == "n1"
    assert body["groupName"] == "weather"
    assert body["role"] == "MASTER"
    assert body["lastKnownReplicationTransactionId"] == 3
    assert body["queues"] == {"q": {"depth": 2, "unacked": 0}}
    assert body["priority"] == 1 and body["designatedPrimary"] is False
    assert body["quorumOverride"] == 0
    assert body["durability"] == "NO_SYNC,NO_SYNC,SIMPLE_MAJORITY"
    assert node.get("/api/latest/virtualhostnode/n1", auth="admin:wrong")[0] == 401
    assert node.get("/api/latest/remotereplicationnode/n1") == (200, [])
    assert node.get("/api/latest/virtualhostnode/n2")[0] == 404
    assert node.get("/nothing/here")[0] == 404


@pytest.mark.processes
def test_operational_log_tells_the_startup_and_the_clean_shutdown(
    start_node: NodeFactory,
) -> None:
    node = start_node()
    idle_client = BlockingConnection(node.url, timeout=10)
    assert node.stop(signal.SIGTERM) == 0
    codes = [code for _, code, _ in node.oplog()]
    assert codes[:9] == [
        "MST-1001",
        "MST-1002",
        "MST-1004",
        "MST-1005",
        "BRK-1002",
        "BRK-1004",
        "REF-1007",
        "MST-1006",
        "HA-1010",
    ]
    assert codes[-2:] == ["MST-1003", "BRK-1005"]
    role_change = "Role change reported: Node : 'n1' : from 'WAITING' to 'MASTER'"
    assert ("INFO", "HA-1010", role_change) in node.oplog()
    del idle_client


@pytest.mark.processes
def test_torn_log_tail_is_cut_and_every_message_kept(start_node: NodeFactory) -> None:
    node = start_node()
    ids = [f"m{i}" for i in range(5)]
    _send(node.url, "q", ids)
    node.stop(signal.SIGKILL)
    with open(node.log_path, "ab") as log:
        log.write(b"\x00\x00\x01\x00torn write of a record that never finished")
    node.start()
    node.wait_ready()
    warnings = [text for level, code, text in node.oplog() if code == "REF-1001"]
    assert len(warnings) == 1 and warnings[0].startswith("Log tail truncated : 46 bytes at")
    assert ("WARN", "REF-1001", warnings[0]) in node.oplog()
    assert [m.id for m in _receive_all(node.url, "q")] == ids


def _run_to_exit(args: list[str], timeout_s: float = 15.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "broker_ref", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout_s,
    )


@pytest.mark.processes
@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('{"name": "n1", "amqp_port": 1, "management_port": 2, "data_dir": "d", "x": 1}', "'x'"),
        ('{"amqp_port": 1, "management_port": 2, "data_dir": "d"}', "'name'"),
        ("{not json", "not JSON"),
    ],
    ids=["unknown-key", "missing-key", "not-json"],
)
def test_bad_config_exits_2_with_one_line(tmp_path: Path, config: str, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(config)
    result = _run_to_exit(["--config", str(path)])
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr


@pytest.mark.processes
def test_a_missing_config_argument_exits_2_with_one_line() -> None:
    result = _run_to_exit([])
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1


@pytest.mark.processes
def test_port_in_use_exits_2_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        path = tmp_path / "config.json"
        config = {
            "name": "n1",
            "amqp_port": port,
            "management_port": _free_port(),
            "data_dir": str(tmp_path / "d"),
        }
        path.write_text(json.dumps(config))
        result = _run_to_exit(["--config", str(path)])
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"broker_ref: cannot listen on 127.0.0.1:{port} (amqp): Address already in use"
    ]
