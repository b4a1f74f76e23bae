"""The producer and consumer workers: pure parts first, then real processes against broker_ref."""

from __future__ import annotations

import io
import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from proton import Condition, Delivery, Message
from proton.reactor import Container

from clients import consumer as consumer_mod
from clients import producer as producer_mod
from clients.consumer import Consumer, message_id_text
from clients.op_writer import OpWriter, split_lines
from clients.options import Address
from clients.producer import MessageEncoder, Producer
from clients.workload import Backoff, FailoverPolicy, Pacer, SendBook

BASE = ["--process", "p1", "--urls", "amqp://127.0.0.1:1,amqp://127.0.0.1:2"]
BASE += ["--nodes", "n1,n2", "--queue", "lab", "--run-start-ns", "5"]


# --- command lines -----------------------------------------------------------------------


def test_producer_arguments_have_the_documented_defaults() -> None:
    config = producer_mod.parse_args(BASE)
    assert config.connection.process == "p1"
    assert config.connection.addresses == (
        Address("amqp://127.0.0.1:1", "n1"),
        Address("amqp://127.0.0.1:2", "n2"),
    )
    assert config.connection.queue == "lab"
    assert config.connection.run_start_ns == 5
    assert config.connection.heartbeat_s == 2.0
    assert (config.rate, config.size, config.window, config.count) == (0.0, 100, 100, None)
    assert config.stop_timeout_s == 10.0


def test_producer_arguments_are_read() -> None:
    extra = ["--rate", "50", "--size", "7", "--window", "3", "--count", "200"]
    extra += ["--stop-timeout", "1.5", "--heartbeat", "0.5"]
    config = producer_mod.parse_args(BASE + extra)
    assert (config.rate, config.size, config.window, config.count) == (50.0, 7, 3, 200)
    assert (config.stop_timeout_s, config.connection.heartbeat_s) == (1.5, 0.5)


def test_consumer_arguments_have_the_documented_defaults() -> None:
    config = consumer_mod.parse_args([*BASE[:1], "c1", *BASE[2:]])
    assert config.connection.process == "c1"
    assert (config.prefetch, config.drain_timeout_s) == (100, 30.0)
    config = consumer_mod.parse_args([*BASE, "--prefetch", "5", "--drain-timeout", "2"])
    assert (config.prefetch, config.drain_timeout_s) == (5, 2.0)


@pytest.mark.parametrize(
    "extra",
    [
        ["--nodes", "n1"],
        ["--urls", ""],
        ["--window", "0"],
        ["--rate", "-1"],
        ["--count", "-2"],
        ["--run-start-ns", "soon"],
    ],
)
def test_bad_producer_arguments_exit_with_status_2(
    extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        producer_mod.parse_args(BASE + extra)
    assert exited.value.code == 2
    assert capsys.readouterr().out == ""


def test_bad_consumer_prefetch_exits_with_status_2() -> None:
    with pytest.raises(SystemExit) as exited:
        consumer_mod.parse_args([*BASE, "--prefetch", "0"])
    assert exited.value.code == 2


# --- op lines ----------------------------------------------------------------------------


def writer_on(stream: io.StringIO, process: str = "p1", now: int = 1_000) -> OpWriter:
    return OpWriter(process, run_start_ns=400, stream=stream, clock=lambda: now)


def test_an_op_line_is_the_json_of_formats_section_2_without_index() -> None:
    out = io.StringIO()
    writer_on(out).write("invoke", "send", "p1-17", node="n2", seq=17)
    line = out.getvalue()
    assert line.endswith("}\n") and line.count("\n") == 1
    assert list(json.loads(line).items()) == [
        ("time", 600),
        ("process", "p1"),
        ("type", "invoke"),
        ("f", "send"),
        ("value", "p1-17"),
        ("node", "n2"),
        ("seq", 17),
    ]


def test_op_lines_carry_optional_fields_only_when_given() -> None:
    out = io.StringIO()
    writer = writer_on(out, process='odd "name"\n')
    writer.write("ok", "receive", "p1-1", redelivered=True)
    writer.write("info", "drain", None, error='queue "lab"\nnot empty')
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first == {
        "time": 600,
        "process": 'odd "name"\n',
        "type": "ok",
        "f": "receive",
        "value": "p1-1",
        "redelivered": True,
    }
    assert second["value"] is None
    assert second["error"] == 'queue "lab"\nnot empty'
    assert "node" not in second and "seq" not in second


def test_commands_are_split_into_stripped_lines_keeping_the_incomplete_rest() -> None:
    assert split_lines(b"stop\n\n  drain \r\nsto") == (["stop", "drain"], b"sto")
    assert split_lines(b"") == ([], b"")


# --- failover, window, rate -------------------------------------------------------------


def test_backoff_starts_with_a_free_round_then_doubles_up_to_the_maximum() -> None:
    backoff = Backoff(initial_s=0.1, factor=2.0, max_s=0.5)
    assert [backoff.delay(r) for r in range(6)] == [0.0, 0.1, 0.2, 0.4, 0.5, 0.5]


def test_failover_tries_the_next_url_at_once_then_the_rest_then_backs_off() -> None:
    policy = FailoverPolicy(3, Backoff(0.1, 2.0, 1.0))
    assert policy.index == 0
    steps = [policy.next() for _ in range(7)]
    assert steps == [(1, 0.0), (2, 0.0), (0, 0.0), (1, 0.1), (2, 0.1), (0, 0.1), (1, 0.2)]
    policy.connected()
    assert [policy.next() for _ in range(4)] == [(2, 0.0), (0, 0.0), (1, 0.0), (2, 0.1)]


def test_failover_with_one_url_retries_it_with_backoff() -> None:
    policy = FailoverPolicy(1)
    assert [policy.next() for _ in range(7)] == [
        (0, 0.0),
        (0, 0.1),
        (0, 0.2),
        (0, 0.25),
        (0, 0.25),
        (0, 0.25),
        (0, 0.25),
    ]


def test_send_book_fills_the_window_and_respects_the_count() -> None:
    book = SendBook(window=2, count=3)
    first, second = book.take_new(), book.take_new()
    assert (first, second, book.take_new()) == (1, 2, None)
    assert first is not None and second is not None
    assert book.unsettled() == [1, 2]
    assert book.settle(first)
    assert not book.settle(first)
    assert book.take_new() == 3
    assert book.exhausted and not book.can_start_new
    assert book.settle(second) and book.settle(3) and book.idle


def test_send_book_resends_lost_messages_first_in_sequence_order() -> None:
    book = SendBook(window=10)
    assert [book.take_new() for _ in range(4)] == [1, 2, 3, 4]
    book.settle(2)
    assert book.connection_lost() == [1, 3, 4]
    assert book.in_flight == 3 and book.unsettled() == []
    assert book.take_resend() == 1
    assert book.unsettled() == [1]
    assert book.connection_lost() == [1]
    assert book.pending_resends() == [1, 3, 4]
    assert [book.take_resend(), book.take_resend()] == [1, 3]
    assert book.abandon() == [1, 3]
    assert book.idle and book.take_resend() is None
    assert book.take_new() == 5


def test_pacer_limits_the_rate_without_catching_up_after_a_pause() -> None:
    pacer = Pacer(rate=10.0, now=0.0, burst=1.0)
    assert pacer.take(0.0)
    assert not pacer.take(0.05)
    assert pacer.wait(0.05) == pytest.approx(0.05)
    assert pacer.take(0.1)
    assert pacer.take(5.0)
    assert not pacer.take(5.0)
    unlimited = Pacer(rate=0.0, now=0.0)
    assert unlimited.unlimited and all(unlimited.take(0.0) for _ in range(1000))


# --- messages ----------------------------------------------------------------------------


@pytest.mark.parametrize("message_id", ["p1-1", "p1-99", "p1-100000", "proc-é-3"])
def test_the_encoder_produces_what_proton_encodes(message_id: str) -> None:
    encoder = MessageEncoder(size=100)
    for _ in range(2):
        message = Message()
        message.decode(encoder.encode(message_id))
        assert message.id == message_id
        assert message.durable is True
        assert message.body == b"x" * 100


def test_received_ids_become_text() -> None:
    assert message_id_text("p1-3") == "p1-3"
    assert message_id_text(None) is None
    assert message_id_text(b"p1-3") == "p1-3"
    assert message_id_text(7) == "7"


# --- the workers' bookkeeping against fake links -------------------------------------------


@dataclass
class FakeDelivery:
    tag: str
    remote_state: object = None
    settled: bool = False
    locally_settled: bool = False
    local_state: object = None
    condition: Condition | None = None
    data: bytes = b""
    partial: bool = False
    aborted: bool = False
    readable: bool = True

    @property
    def remote(self) -> FakeDelivery:
        return self

    @property
    def pending(self) -> int:
        return len(self.data)

    def settle(self) -> None:
        self.locally_settled = True

    def update(self, state: object) -> None:
        self.local_state = state


@dataclass
class FakeLink:
    credit: int = 0
    sent: list[tuple[str, bytes]] = field(default_factory=list)
    incoming: list[FakeDelivery] = field(default_factory=list)
    drains: list[int] = field(default_factory=list)
    flows: list[int] = field(default_factory=list)
    queued: int = 0
    drain_open: bool = False
    _tag: str = ""

    def delivery(self, tag: str) -> None:
        self._tag = tag

    def stream(self, data: bytes) -> None:
        self.sent.append((self._tag, data))

    def advance(self) -> None:
        if self._tag:
            self.credit -= 1
            self._tag = ""

    def recv(self, limit: int) -> bytes:
        return self.incoming.pop(0).data

    def flow(self, n: int) -> None:
        self.flows.append(n)
        self.credit += n

    def drain(self, n: int) -> None:
        self.drains.append(n)
        self.credit += n
        self.drain_open = True

    def draining(self) -> bool:
        return self.drain_open and self.credit > 0


def ops(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def short(op: dict[str, object]) -> tuple[object, ...]:
    return (op["type"], op["f"], op["value"], op.get("node"), op.get("error"))


def make_producer(out: io.StringIO, extra: list[str] | None = None) -> tuple[Producer, Container]:
    container = Container()
    config = producer_mod.parse_args(BASE + (extra or []))
    producer = Producer(config, writer_on(out), container, log=lambda _message: None)
    return producer, container


def sent_ids(link: FakeLink) -> list[str]:
    ids = []
    for _tag, data in link.sent:
        message = Message()
        message.decode(data)
        ids.append(str(message.id))
    return ids


def test_the_producer_records_outcomes_and_resends_unsettled_messages_after_a_reconnect() -> None:
    out = io.StringIO()
    producer, _ = make_producer(out, ["--count", "4"])
    link = FakeLink(credit=3)
    producer.link_ready(link, "n1")  # type: ignore[arg-type]
    assert [tag for tag, _ in link.sent] == ["1", "2", "3"]
    assert sent_ids(link) == ["p1-1", "p1-2", "p1-3"]
    accepted = FakeDelivery("1", remote_state=Delivery.ACCEPTED, settled=True)
    producer.delivery(accepted)  # type: ignore[arg-type]
    assert accepted.locally_settled
    rejected = FakeDelivery("2", Delivery.REJECTED, True, condition=Condition("amqp:x", "full"))
    producer.delivery(rejected)  # type: ignore[arg-type]
    producer.link_lost("n1", "amqp:connection:forced")
    second = FakeLink(credit=10)
    producer.link_ready(second, "n2")  # type: ignore[arg-type]
    assert sent_ids(second) == ["p1-3", "p1-4"]
    producer.delivery(FakeDelivery("3", Delivery.RELEASED, True))  # type: ignore[arg-type]
    producer.delivery(FakeDelivery("4", Delivery.ACCEPTED, True))  # type: ignore[arg-type]
    assert [short(op) for op in ops(out)] == [
        ("invoke", "send", "p1-1", "n1", None),
        ("invoke", "send", "p1-2", "n1", None),
        ("invoke", "send", "p1-3", "n1", None),
        ("ok", "send", "p1-1", "n1", None),
        ("fail", "send", "p1-2", "n1", "amqp:x: full"),
        ("info", "send", "p1-3", "n1", "connection lost"),
        ("invoke", "send", "p1-3", "n2", None),
        ("invoke", "send", "p1-4", "n2", None),
        ("fail", "send", "p1-3", "n2", "released"),
        ("ok", "send", "p1-4", "n2", None),
    ]
    assert [op["seq"] for op in ops(out)] == [1, 2, 3, 1, 2, 3, 3, 4, 3, 4]


def test_the_producer_ignores_an_update_without_outcome_and_a_stale_delivery() -> None:
    out = io.StringIO()
    producer, _ = make_producer(out, ["--count", "1"])
    producer.link_ready(FakeLink(credit=1), "n1")  # type: ignore[arg-type]
    producer.delivery(FakeDelivery("1"))  # type: ignore[arg-type]
    producer.delivery(FakeDelivery("9", Delivery.ACCEPTED, True))  # type: ignore[arg-type]
    assert [op["type"] for op in ops(out)] == ["invoke"]


def test_the_producer_on_stop_sends_nothing_new_and_gives_up_on_unsettled_messages() -> None:
    out = io.StringIO()
    producer, _ = make_producer(out, ["--window", "3", "--stop-timeout", "0"])
    link = FakeLink(credit=2)
    producer.link_ready(link, "n1")  # type: ignore[arg-type]
    producer.link_lost("n1", "gone")
    link = FakeLink(credit=1)
    producer.link_ready(link, "n2")  # type: ignore[arg-type]
    producer.on_command("stop")
    link.credit = 5
    producer.link_flow(link)  # type: ignore[arg-type]
    assert sent_ids(link) == ["p1-1", "p1-2"]
    producer._stop_expired()
    types = [short(op) for op in ops(out)]
    assert types[-2:] == [
        ("info", "send", "p1-1", "n2", "no outcome before stop"),
        ("info", "send", "p1-2", "n2", "no outcome before stop"),
    ]
    producer.delivery(FakeDelivery("1", Delivery.ACCEPTED, True))  # type: ignore[arg-type]
    assert len(ops(out)) == len(types)


def test_the_producer_keeps_to_the_window() -> None:
    out = io.StringIO()
    producer, _ = make_producer(out, ["--window", "2"])
    link = FakeLink(credit=100)
    producer.link_ready(link, "n1")  # type: ignore[arg-type]
    assert len(link.sent) == 2
    producer.delivery(FakeDelivery("1", Delivery.ACCEPTED, True))  # type: ignore[arg-type]
    assert [tag for tag, _ in link.sent] == ["1", "2", "3"]


def encoded(message_id: str, delivery_count: int = 0) -> bytes:
    message = Message(id=message_id, body=b"x", durable=True)
    message.delivery_count = delivery_count
    return bytes(message.encode())


def make_consumer(out: io.StringIO, extra: list[str] | None = None) -> Consumer:
    config = consumer_mod.parse_args([*BASE[:1], "c1", *BASE[2:], *(extra or [])])
    return Consumer(config, writer_on(out, "c1"), Container(), log=lambda _message: None)


def receive(consumer: Consumer, link: FakeLink, message_id: str, count: int = 0) -> FakeDelivery:
    delivery = FakeDelivery("t", data=encoded(message_id, count))
    link.incoming.append(delivery)
    link.credit -= 1
    consumer.delivery(delivery)  # type: ignore[arg-type]
    return delivery


def test_the_consumer_records_each_message_then_accepts_it_and_tops_up_credit() -> None:
    out = io.StringIO()
    consumer = make_consumer(out, ["--prefetch", "4"])
    link = FakeLink()
    consumer.link_ready(link, "n1")  # type: ignore[arg-type]
    assert link.flows == [4]
    first = receive(consumer, link, "p1-1")
    assert first.local_state == Delivery.ACCEPTED and first.locally_settled
    receive(consumer, link, "p1-2", count=1)
    assert link.flows == [4, 2]
    consumer.delivery(FakeDelivery("t", data=encoded("p1-3"), partial=True))  # type: ignore[arg-type]
    assert [(op["value"], op["redelivered"], op["node"]) for op in ops(out)] == [
        ("p1-1", False, "n1"),
        ("p1-2", True, "n1"),
    ]


def test_the_consumer_drains_in_rounds_until_one_brings_no_message() -> None:
    out = io.StringIO()
    consumer = make_consumer(out, ["--prefetch", "3"])
    link = FakeLink()
    consumer.link_ready(link, "n1")  # type: ignore[arg-type]
    consumer.on_command("drain")
    assert link.drains == [0]
    receive(consumer, link, "p1-1")
    link.credit = 0
    consumer.link_flow(link)  # type: ignore[arg-type]
    assert link.drains == [0, 3]
    link.credit = 0
    consumer.link_flow(link)  # type: ignore[arg-type]
    assert [short(op) for op in ops(out)] == [
        ("invoke", "drain", None, "n1", None),
        ("ok", "receive", "p1-1", "n1", None),
        ("ok", "drain", None, "n1", None),
    ]


def test_the_consumer_restarts_the_drain_on_a_new_link_and_reports_a_timeout() -> None:
    out = io.StringIO()
    consumer = make_consumer(out)
    consumer.on_command("drain")
    first = FakeLink()
    consumer.link_ready(first, "n1")  # type: ignore[arg-type]
    consumer.link_lost("n1", "gone")
    first.credit = 0
    consumer.link_flow(first)  # type: ignore[arg-type]
    consumer._drain_expired()
    consumer.on_command("drain")
    assert [short(op)[:3] for op in ops(out)] == [
        ("invoke", "drain", None),
        ("info", "drain", None),
    ]
    assert "not drained within 30 s" in str(ops(out)[-1]["error"])


# --- real processes: broker_ref and the workers --------------------------------------------

OP_FIELDS = {"time", "process", "type", "f", "value", "node", "seq", "redelivered", "error"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


class BrokerNode:
    """One broker_ref node on free ports with its data in `data_dir`."""

    def __init__(self, folder: Path, name: str = "n1") -> None:
        self.name = name
        self.folder = folder
        self.amqp_port = free_port()
        self.management_port = free_port()
        self.config = folder / f"{name}.json"
        self.config.write_text(
            json.dumps(
                {
                    "name": name,
                    "group": "lab",
                    "host": "127.0.0.1",
                    "amqp_port": self.amqp_port,
                    "management_port": self.management_port,
                    "data_dir": str(folder / f"{name}-data"),
                    "coalescing_sync": True,
                    "idle_timeout_s": 2.0,
                }
            )
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"amqp://127.0.0.1:{self.amqp_port}"

    def start(self, timeout_s: float = 20.0) -> None:
        with (self.folder / f"{self.name}.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "broker_ref", "--config", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout_s
        health = f"http://127.0.0.1:{self.management_port}/health"
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.folder / f"{self.name}.log").read_text()
            try:
                with urllib.request.urlopen(health, timeout=1) as reply:
                    if json.load(reply).get("role") == "MASTER":
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"{self.name} was not MASTER within {timeout_s} s")

    def kill(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None


class WorkerRun:
    """A worker process; its stdout lines are collected by a thread."""

    def __init__(self, module: str, args: list[str], stderr_path: Path) -> None:
        with stderr_path.open("ab") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", module, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
            )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append(raw.decode())

    def ops(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in list(self.lines)]

    def command(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait(self, timeout_s: float) -> int:
        code = self.proc.wait(timeout=timeout_s)
        self._reader.join(timeout=5)
        return code

    def wait_until(
        self, predicate: Callable[[list[dict[str, object]]], bool], timeout_s: float
    ) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate(self.ops()):
                return
            assert self.proc.poll() is None, f"worker exited with {self.proc.returncode}"
            time.sleep(0.02)
        raise AssertionError("the worker did not get there in time")


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    started = Lab(tmp_path)
    yield started
    started.cleanup()


class Lab:
    """The processes of one test, all killed at the end."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.run_start_ns = time.monotonic_ns()
        self.nodes: list[BrokerNode] = []
        self.workers: list[WorkerRun] = []

    def node(self, name: str = "n1") -> BrokerNode:
        node = BrokerNode(self.folder, name)
        self.nodes.append(node)
        node.start()
        return node

    def worker(
        self, module: str, process: str, addresses: list[tuple[str, str]], *extra: str
    ) -> WorkerRun:
        args = ["--process", process, "--queue", "lab", "--run-start-ns", str(self.run_start_ns)]
        args += ["--urls", ",".join(url for url, _ in addresses)]
        args += ["--nodes", ",".join(node for _, node in addresses), *extra]
        worker = WorkerRun(module, args, self.folder / f"{process}.err")
        self.workers.append(worker)
        return worker

    def cleanup(self) -> None:
        for worker in self.workers:
            stop_process(worker.proc)
        for node in self.nodes:
            node.kill()


def check_lines(ops_: list[dict[str, object]], process: str, role: str) -> None:
    """Each line is an operation of formats.md section 2 (without index), in time order."""
    last_time = -1
    open_sends: set[object] = set()
    for op in ops_:
        assert set(op) <= OP_FIELDS and "index" not in op, op
        assert {"time", "process", "type", "f", "value"} <= set(op), op
        assert isinstance(op["time"], int) and op["time"] >= last_time, op
        last_time = op["time"]
        assert op["process"] == process
        assert op["type"] in {"invoke", "ok", "fail", "info"}
        if "error" in op:
            assert op["type"] in {"fail", "info"} and isinstance(op["error"], str), op
        if op["type"] in {"fail", "info"}:
            assert isinstance(op.get("error"), str), op
        if role == "producer":
            assert op["f"] == "send" and isinstance(op["value"], str), op
            assert op["value"] == f"{process}-{op['seq']}", op
            if op["type"] == "invoke":
                assert op["value"] not in open_sends, f"two invokes in a row: {op}"
                open_sends.add(op["value"])
            else:
                assert op["value"] in open_sends, f"completion without invoke: {op}"
                open_sends.discard(op["value"])
        else:
            assert op["f"] in {"receive", "drain"}, op
            if op["f"] == "receive":
                assert op["type"] == "ok" and isinstance(op["value"], str), op
                assert isinstance(op["redelivered"], bool), op
            else:
                assert op["value"] is None, op
    if role == "producer":
        assert not open_sends, f"invokes without completion: {sorted(map(str, open_sends))}"


def acknowledged(ops_: list[dict[str, object]]) -> set[object]:
    return {op["value"] for op in ops_ if op["type"] == "ok"}


def received(ops_: list[dict[str, object]]) -> set[object]:
    return {op["value"] for op in ops_ if op["f"] == "receive"}


@pytest.mark.processes
def test_a_producer_and_a_consumer_move_every_message_then_stop_and_drain(lab: Lab) -> None:
    node = lab.node()
    addresses = [(f"amqp://127.0.0.1:{free_port()}", "n0"), (node.url, "n1")]
    consumer = lab.worker("clients.consumer", "c1", addresses, "--prefetch", "20")
    producer = lab.worker("clients.producer", "p1", addresses, "--count", "200", "--window", "30")
    producer.wait_until(lambda ops_: len(acknowledged(ops_)) == 200, timeout_s=30)
    producer.command("stop")
    assert producer.wait(timeout_s=15) == 0
    consumer.command("drain")
    assert consumer.wait(timeout_s=40) == 0
    sends, receives = producer.ops(), consumer.ops()
    check_lines(sends, "p1", "producer")
    check_lines(receives, "c1", "consumer")
    assert acknowledged(sends) == {f"p1-{seq}" for seq in range(1, 201)}
    assert received(receives) == acknowledged(sends)
    assert {op["node"] for op in sends if op["f"] == "send"} == {"n1"}
    assert {op["node"] for op in receives if op["f"] == "receive"} == {"n1"}
    drains = [(op["type"], op["f"]) for op in receives if op["f"] == "drain"]
    assert drains == [("invoke", "drain"), ("ok", "drain")]
    assert receives[-1]["f"] == "drain"


@pytest.mark.processes
def test_a_broker_killed_mid_run_loses_nothing_acknowledged_and_the_producer_resends(
    lab: Lab,
) -> None:
    node = lab.node()
    addresses = [(node.url, "n1")]
    consumer = lab.worker("clients.consumer", "c1", addresses, "--heartbeat", "1")
    producer = lab.worker("clients.producer", "p1", addresses, "--window", "50", "--heartbeat", "1")
    producer.wait_until(lambda ops_: len(acknowledged(ops_)) >= 300, timeout_s=30)
    node.kill()
    producer.wait_until(
        lambda ops_: any(op.get("error") == "connection lost" for op in ops_), timeout_s=10
    )
    time.sleep(0.3)
    node.start()
    lost_at = len(producer.ops())
    producer.wait_until(lambda ops_: len(acknowledged(ops_[lost_at:])) >= 100, timeout_s=30)
    producer.command("stop")
    assert producer.wait(timeout_s=20) == 0
    consumer.command("drain")
    assert consumer.wait(timeout_s=40) == 0
    sends, receives = producer.ops(), consumer.ops()
    check_lines(sends, "p1", "producer")
    check_lines(receives, "c1", "consumer")
    infos = [op for op in sends if op["type"] == "info"]
    assert infos and all(op["error"] == "connection lost" for op in infos)
    for info in infos:
        later = sends[sends.index(info) + 1 :]
        assert any(op["type"] == "invoke" and op["value"] == info["value"] for op in later)
    assert acknowledged(sends) <= received(receives)
    assert receives[-1]["type"] == "ok" and receives[-1]["f"] == "drain"


@pytest.mark.processes
@pytest.mark.parametrize("module", ["clients.producer", "clients.consumer"])
def test_end_of_stdin_makes_a_worker_exit_at_once(lab: Lab, module: str) -> None:
    node = lab.node()
    worker = lab.worker(module, "w1", [(node.url, "n1")])
    time.sleep(1.0)
    assert worker.proc.poll() is None
    seen = len(worker.lines)
    worker.close_stdin()
    started = time.monotonic()
    assert worker.wait(timeout_s=5) == 0
    assert time.monotonic() - started < 2
    assert len(worker.lines) >= seen


@pytest.mark.processes
def test_a_producer_with_no_broker_stops_with_nothing_to_report(lab: Lab) -> None:
    producer = lab.worker(
        "clients.producer", "p1", [(f"amqp://127.0.0.1:{free_port()}", "n1")], "--stop-timeout", "1"
    )
    time.sleep(0.5)
    producer.command("stop")
    assert producer.wait(timeout_s=5) == 0
    assert producer.ops() == []


@pytest.mark.processes
def test_a_consumer_that_cannot_drain_reports_info(lab: Lab) -> None:
    consumer = lab.worker(
        "clients.consumer",
        "c1",
        [(f"amqp://127.0.0.1:{free_port()}", "n1")],
        "--drain-timeout",
        "1",
    )
    consumer.command("drain")
    assert consumer.wait(timeout_s=10) == 0
    ops_ = consumer.ops()
    check_lines(ops_, "c1", "consumer")
    assert [(op["type"], op["f"]) for op in ops_] == [("invoke", "drain"), ("info", "drain")]


REFUSER = """
import sys
from proton import Condition, Handler
from proton.reactor import Container

class Refuse(Handler):
    def on_connection_remote_open(self, event):
        event.connection.condition = Condition("amqp:connection:forced", "not the master")
        event.connection.open()
        event.connection.close()

container = Container(Refuse())
container.listen(sys.argv[1])
print("listening", flush=True)
container.run()
"""


@pytest.mark.processes
def test_a_node_that_is_not_the_master_sends_the_workers_to_the_next_url(lab: Lab) -> None:
    port = free_port()
    refuser = subprocess.Popen(
        [sys.executable, "-c", REFUSER, f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert refuser.stdout is not None and refuser.stdout.readline() == b"listening\n"
        node = lab.node()
        addresses = [(f"amqp://127.0.0.1:{port}", "n0"), (node.url, "n1")]
        producer = lab.worker("clients.producer", "p1", addresses, "--count", "20")
        consumer = lab.worker("clients.consumer", "c1", addresses)
        producer.wait_until(lambda ops_: len(acknowledged(ops_)) == 20, timeout_s=20)
        consumer.wait_until(lambda ops_: len(received(ops_)) == 20, timeout_s=20)
        producer.command("stop")
        consumer.command("drain")
        assert producer.wait(timeout_s=10) == 0 and consumer.wait(timeout_s=40) == 0
    finally:
        stop_process(refuser)
    assert {op["node"] for op in producer.ops()} == {"n1"}
    assert {op["node"] for op in consumer.ops() if op["f"] == "receive"} == {"n1"}
    for process in ("p1", "c1"):
        log = (lab.folder / f"{process}.err").read_text()
        assert "no link on n0: amqp:connection:forced: not the master" in log


@pytest.mark.processes
def test_sigterm_ends_a_worker_at_once(lab: Lab) -> None:
    worker = lab.worker("clients.consumer", "c1", [(f"amqp://127.0.0.1:{free_port()}", "n1")])
    time.sleep(0.5)
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.wait(timeout_s=3) == -signal.SIGTERM
