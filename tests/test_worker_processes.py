"""Real producer and consumer worker processes against a broker_ref node process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lab.ground.ports import free_ports

# --- real processes: broker_ref and the workers --------------------------------------------

OP_FIELDS = {"time", "process", "type", "f", "value", "node", "seq", "redelivered", "error"}


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on, reserved for this process (lab.ground.ports):
    below the ephemeral range, so no outgoing connection takes it before it is used."""
    return free_ports(1)[0]


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
    """Each line is an operation of history.jsonl (docs/run-folder.md) without index, in time
    order."""
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
    producer.wait_until(lambda ops_: len(acknowledged(ops_)) >= 300, timeout_s=120)
    node.kill()
    producer.wait_until(
        lambda ops_: any(op.get("error") == "connection lost" for op in ops_), timeout_s=60
    )
    time.sleep(0.3)
    node.start()
    lost_at = len(producer.ops())
    producer.wait_until(lambda ops_: len(acknowledged(ops_[lost_at:])) >= 100, timeout_s=120)
    producer.command("stop")
    assert producer.wait(timeout_s=60) == 0
    consumer.command("drain")
    assert consumer.wait(timeout_s=120) == 0
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
def test_a_drain_the_broker_leaves_unanswered_goes_on_over_a_new_link(lab: Lab) -> None:
    # A frozen broker answers nothing: the consumer (no heartbeat: the drain's own watch)
    # records the unanswered round, renews its link, and drains once the broker wakes.
    addresses = [((node := lab.node()).url, "n1")]
    watching = ("--heartbeat", "0", "--drain-stall", "1")
    consumer = lab.worker("clients.consumer", "c1", addresses, *watching)
    producer = lab.worker("clients.producer", "p1", addresses, "--count", "300")
    producer.wait_until(lambda ops_: len(acknowledged(ops_)) == 300, timeout_s=60)
    producer.command("stop")
    assert producer.wait(timeout_s=30) == 0
    consumer.wait_until(lambda ops_: len(received(ops_)) == 300, timeout_s=60)
    assert node.proc is not None
    node.proc.send_signal(signal.SIGSTOP)
    try:
        consumer.command("drain")
        consumer.wait_until(lambda ops_: any(op["type"] == "info" for op in ops_), timeout_s=60)
    finally:
        node.proc.send_signal(signal.SIGCONT)
    assert consumer.wait(timeout_s=60) == 0
    check_lines(receives := consumer.ops(), "c1", "consumer")
    drains = [(op["type"], op.get("error", "")) for op in receives if op["f"] == "drain"]
    assert [kind for kind, _ in drains] == ["invoke", "info", "invoke", "ok"], drains
    assert "drain round unanswered for " in drains[1][1] and "renewing the link" in drains[1][1]
    assert received(receives) == acknowledged(producer.ops())
    log = (lab.folder / "c1.err").read_text()
    assert "renewing the link on n1" in log and log.count("link ready on n1") == 2


@pytest.mark.processes
@pytest.mark.parametrize("module", ["clients.producer", "clients.consumer"])
def test_end_of_stdin_makes_a_worker_exit_at_once(lab: Lab, module: str) -> None:
    node = lab.node()
    worker = lab.worker(module, "w1", [(node.url, "n1")])
    time.sleep(1.0)
    assert worker.proc.poll() is None
    seen = len(worker.lines)
    worker.close_stdin()
    assert worker.wait(timeout_s=60) == 0
    assert len(worker.lines) >= seen


@pytest.mark.processes
def test_a_producer_with_no_broker_stops_with_nothing_to_report(lab: Lab) -> None:
    producer = lab.worker(
        "clients.producer", "p1", [(f"amqp://127.0.0.1:{free_port()}", "n1")], "--stop-timeout", "1"
    )
    time.sleep(0.5)
    producer.command("stop")
    assert producer.wait(timeout_s=60) == 0
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
    assert consumer.wait(timeout_s=60) == 0
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
        producer.wait_until(lambda ops_: len(acknowledged(ops_)) == 20, timeout_s=120)
        consumer.wait_until(lambda ops_: len(received(ops_)) == 20, timeout_s=120)
        producer.command("stop")
        consumer.command("drain")
        assert producer.wait(timeout_s=60) == 0 and consumer.wait(timeout_s=120) == 0
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
    assert worker.wait(timeout_s=60) == -signal.SIGTERM
