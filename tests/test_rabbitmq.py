"""RabbitMQ nodes on local processes (Debian's rabbitmq-server): what the lab relies on.

- The lab's AMQP 1.0 clients count a send acknowledged when the broker settles it with the
  accepted outcome. The test checks that RabbitMQ's AMQP 1.0 plugin settles a transfer only
  once its quorum queue has confirmed it: with two of three members down nothing is settled,
  and the same transfers are settled once one member is back.
- A cut between two nodes (a packet filter between their own loopback addresses, as root)
  is a partition in RabbitMQ's own view: `rabbitmqctl cluster_status` lists it once the
  nodes meet again (partition handling `ignore`, which leaves it listed). On that mirrored
  queue the lab's consumer then drains what was sent over AMQP 0-9-1 (RabbitMQ 3.10's AMQP
  1.0 link drain crashes a classic queue's channel) and says the queue is empty.
Nothing of a run is left running: no Erlang VM, no port mapper.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from lab.backends.catalog import make_cluster
from lab.backends.process.cluster import ProcessCluster
from lab.ground.children import process_alive
from lab.ground.errors import SetupError
from lab.ground.spec import Durability, GroupSettings, Topology
from lab.pytest_plugin import skip_unless_ci
from lab.targets.rabbitmq.install import ensure_rabbitmq
from lab.targets.rabbitmq.rules import QUEUE
from lab.targets.rabbitmq.target import RabbitMQTarget

pytestmark = [pytest.mark.rabbitmq, pytest.mark.processes]

ROOT = Path(__file__).resolve().parent.parent
DEADLINE_S = 240.0  # only a hung test reaches it: nodes boot in 10-25 s on two busy cores


class _Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, dict[str, Any]]] = []

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        self.seen.append((kind, node, fields))


@pytest.fixture(scope="module", autouse=True)
def _rabbitmq() -> None:
    try:
        ensure_rabbitmq()
    except SetupError as exc:
        skip_unless_ci(str(exc))


def _wait(what: str, until: Callable[[], bool], deadline_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + deadline_s
    while not until():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {deadline_s:g} s: {what}")
        time.sleep(0.3)


@pytest.fixture
def cluster_of(tmp_path: Path) -> Iterator[Callable[..., ProcessCluster]]:
    made: list[ProcessCluster] = []

    def make(**settings: str) -> ProcessCluster:
        group = GroupSettings(target_context={"rabbitmq": settings})
        cluster = make_cluster(
            "process", RabbitMQTarget(), Topology(3), Durability(), tmp_path,
            events=_Events(), group=group,
        )  # fmt: skip
        assert isinstance(cluster, ProcessCluster)
        made.append(cluster)
        cluster.start()
        return cluster

    try:
        yield make
    finally:
        for cluster in made:
            pids = cluster.pids()
            cluster.stop()
            left = {name: pid for name, pid in pids.items() if process_alive(pid)}
            assert not left, f"still running after stop: {left}"


class _Producer:
    """The lab's producer worker, sending `count` messages to one node; its operations."""

    def __init__(self, url: str, count: int, log: IO[str]) -> None:
        self.ops: list[dict[str, Any]] = []
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "clients.producer", "--process", "p1", "--urls", url,
                "--nodes", "n1", "--queue", f"/amq/queue/{QUEUE}", "--run-start-ns",
                str(time.monotonic_ns()), "--rate", "20", "--count", str(count),
            ],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
            text=True,
        )  # fmt: skip
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.ops.append(json.loads(line))

    def of(self, type_: str) -> set[str]:
        return {str(o["value"]) for o in list(self.ops) if o["f"] == "send" and o["type"] == type_}

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def test_a_transfer_is_settled_only_once_a_majority_of_the_quorum_queue_holds_it(
    cluster_of: Callable[..., ProcessCluster], tmp_path: Path
) -> None:
    # (pause_minority would stop the lone node's broker: nothing to send to)
    cluster = cluster_of(**{"queue-type": "quorum", "partition-handling": "ignore"})
    master = next(n for n, r in cluster.roles().items() if r == "MASTER")
    others = [n for n in cluster.node_names if n != master]
    for name in others:
        cluster.kill(name)
    url = cluster.client_urls()[cluster.node_names.index(master)]
    with (tmp_path / "p1.log").open("w") as log:
        _settled_once_a_majority_holds(cluster, others[0], _Producer(url, 5, log))


def _settled_once_a_majority_holds(cluster: ProcessCluster, back: str, producer: _Producer) -> None:
    try:
        _wait("the producer sent its 5 messages", lambda: len(producer.of("invoke")) == 5)
        time.sleep(5.0)  # a confirm would come in milliseconds; none may come at all
        assert producer.of("ok") == set(), "acknowledged while two of three members were down"
        cluster.restart(back)  # a majority again
        _wait("the 5 messages acknowledged", lambda: len(producer.of("ok")) == 5)
    finally:
        producer.stop()


def _cluster_status(cluster: ProcessCluster, node: str) -> dict[str, Any]:
    assert cluster.plan is not None
    target = cluster.target
    assert isinstance(target, RabbitMQTarget)
    command = target.ctl_command(
        cluster.plan, cluster.plan.node(node), "cluster_status", "--formatter", "json"
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_a_cut_between_nodes_is_a_partition_in_rabbitmqs_own_view(
    cluster_of: Callable[..., ProcessCluster], tmp_path: Path
) -> None:
    from lab.backends.process.peer_filter import peer_filter_refusal

    refusal = peer_filter_refusal()
    if refusal is not None:
        pytest.skip(f"node links between local RabbitMQ nodes: {refusal}")
    cluster = cluster_of(
        **{"queue-type": "mirrored", "partition-handling": "ignore", "net-ticktime": "2"}
    )
    assert cluster.plan is not None and cluster.peer_filter is not None
    names = {n: f"{n}@{cluster.plan.node(n).replication_host}" for n in cluster.node_names}
    assert _cluster_status(cluster, "n2")["partitions"] == {}
    for link in ("n1_to_n2", "n1_to_n3"):
        cluster.set_link(link, False)
    target = cluster.target
    assert isinstance(target, RabbitMQTarget)
    n2 = target.api(cluster.plan.node("n2"))
    _wait("n2 finds n1 down", lambda: names["n1"] not in n2.running_nodes())
    for link in ("n1_to_n2", "n1_to_n3"):
        cluster.set_link(link, True)

    def partitioned() -> bool:
        return names["n1"] in _cluster_status(cluster, "n2")["partitions"].get(names["n2"], [])

    _wait("cluster_status on n2 lists the partition from n1", partitioned)
    _sent_then_drained_by_get(cluster, tmp_path)


def _sent_then_drained_by_get(cluster: ProcessCluster, tmp_path: Path) -> None:
    """Five sends acknowledged on n2, then a consumer drains them over AMQP 0-9-1."""
    url = cluster.client_urls()[1]
    with (tmp_path / "p1.log").open("w") as log:
        producer = _Producer(url, 5, log)
        try:
            _wait("5 messages acknowledged", lambda: len(producer.of("ok")) == 5)
        finally:
            producer.stop()
    target = cluster.target
    assert isinstance(target, RabbitMQTarget)
    argv = [
        sys.executable, "-m", "clients.consumer", "--process", "c1", "--urls", url,
        "--nodes", "n2", "--queue", f"/amq/queue/{QUEUE}", "--run-start-ns",
        str(time.monotonic_ns()), "--drain-timeout", "60", *target.consumer_options,
    ]  # fmt: skip
    log_path = tmp_path / "c1.log"
    with log_path.open("w") as log:
        consumer = subprocess.Popen(
            argv, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True
        )
    assert consumer.stdin is not None and consumer.stdout is not None
    consumer.stdin.write("drain\n")
    consumer.stdin.flush()  # kept open until it ends: an end of file would end it at once
    out: list[str] = []
    stdout = consumer.stdout
    reader = threading.Thread(target=lambda: out.extend(stdout.read().splitlines()))
    reader.start()
    reader.join(DEADLINE_S)
    if reader.is_alive():
        consumer.kill()
        reader.join()
    consumer.wait()
    consumer.stdin.close()
    err = log_path.read_text()
    ops = [json.loads(line) for line in out]
    got = {o["value"] for o in ops if o["f"] == "receive" and o["type"] == "ok"}
    assert got == producer.of("ok"), err
    assert [o["type"] for o in ops if o["f"] == "drain"] == ["invoke", "ok"], err


def _pids_started(folder: Path) -> dict[str, int]:
    """The nodes' and the port mapper's pids a run recorded (events.jsonl)."""
    found: dict[str, int] = {}
    events = folder / "events.jsonl"
    lines = events.read_text(encoding="utf-8").splitlines() if events.is_file() else []
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line
        if event.get("kind") in ("node.start", "service.start"):
            found[str(event.get("node") or event.get("service"))] = int(event["pid"])
    return found


@pytest.mark.long
def test_a_killed_lab_leaves_no_erlang_vm_and_no_port_mapper(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "lab", "run", "master-failure", "--target", "rabbitmq"]
    argv += ["--seed", "1", "--runs-dir", str(tmp_path)]
    lab = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    folder = tmp_path / "master-failure" / "latest"
    try:
        _wait(
            "the run started its port mapper and three nodes",
            lambda: len(_pids_started(folder)) == 4,
        )
    finally:
        lab.kill()  # SIGKILL: no teardown of the lab's own
        lab.wait()
    pids = _pids_started(folder)
    _wait(
        f"every node and the port mapper gone: {pids}",
        lambda: not any(map(process_alive, pids.values())),
        60.0,
    )
