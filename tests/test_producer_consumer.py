"""The producer's and the consumer's bookkeeping, driven through fake proton links."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from client_helpers import BASE, writer_on
from proton import Condition, Delivery, Message
from proton.reactor import Container

from clients import consumer as consumer_mod
from clients import producer as producer_mod
from clients.consumer import Consumer
from clients.producer import Producer

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


class Watched:
    """A consumer with a hand-moved clock and a failover link that records renewals."""

    def __init__(self, extra: list[str]) -> None:
        self.out, self.now, self.renewed = io.StringIO(), 100.0, list[str]()
        config = consumer_mod.parse_args([*BASE[:1], "c1", *BASE[2:], *extra])
        writer = writer_on(self.out, "c1")
        self.consumer = Consumer(config, writer, Container(), lambda _m: None, lambda: self.now)
        fake = SimpleNamespace(renew=self.renewed.append, close=lambda done: None)
        self.consumer._failover = fake  # type: ignore[assignment]


def test_a_drain_round_the_broker_leaves_open_is_recorded_and_drained_again_on_a_new_link() -> None:
    watched = Watched(["--prefetch", "3"])
    consumer, out, renewed = watched.consumer, watched.out, watched.renewed
    first = FakeLink()
    consumer.link_ready(first, "n1")  # type: ignore[arg-type]
    first.credit = 0  # the credit given before the drain was used up
    consumer.on_command("drain")
    receive(consumer, first, "p1-1")
    watched.now += 5.0
    consumer._stall_check()  # 5 s of 8: nothing yet
    assert renewed == []
    watched.now += 8.0  # a message and then nothing: 2 of the 3 credits left, no flow
    consumer._stall_check()
    assert len(renewed) == 1 and "2 left, no flow from the broker" in renewed[0]
    consumer.link_lost("n1", renewed[0])
    second = FakeLink()
    consumer.link_ready(second, "n1")  # type: ignore[arg-type]
    assert second.drains == [3]  # a new round on the new link
    receive(consumer, second, "p1-2")
    second.credit = 0
    consumer.link_flow(second)  # type: ignore[arg-type]
    second.credit = 0
    consumer.link_flow(second)  # type: ignore[arg-type]
    assert [short(op)[:4] for op in ops(out)] == [
        ("invoke", "drain", None, "n1"),
        ("ok", "receive", "p1-1", "n1"),
        ("info", "drain", None, "n1"),
        ("invoke", "drain", None, "n1"),
        ("ok", "receive", "p1-2", "n1"),
        ("ok", "drain", None, "n1"),
    ]
    assert "unanswered for 13.0 s on n1: 1 of 3 credit used" in str(ops(out)[2]["error"])


@pytest.mark.parametrize(("extra", "answered"), [(["--drain-stall", "0"], False), ([], True)])
def test_a_drain_that_is_answered_is_never_renewed_and_0_turns_the_watch_off(
    extra: list[str], answered: bool
) -> None:
    watched = Watched(extra)
    link = FakeLink()
    watched.consumer.link_ready(link, "n1")  # type: ignore[arg-type]
    watched.consumer.on_command("drain")
    for i in range(20):
        watched.now += 1.0
        if answered:
            receive(watched.consumer, link, f"p1-{i}")
        watched.consumer._stall_check()
    assert watched.renewed == []


def test_a_drain_by_get_closes_the_link_and_leaves_the_drain_to_amqp_0_9_1() -> None:
    watched = Watched(["--drain-by-get", "admin:secret"])
    consumer, out = watched.consumer, watched.out
    closed: list[object] = []
    consumer._failover = SimpleNamespace(close=closed.append)  # type: ignore[assignment]
    consumer.on_command("drain")
    assert [(o["type"], o["f"]) for o in ops(out)] == [("invoke", "drain")]
    assert consumer.drain_by_get_at == watched.now and len(closed) == 1


def test_a_drain_by_get_needs_a_user_and_password() -> None:
    with pytest.raises(SystemExit) as exited:
        consumer_mod.parse_args([*BASE[:1], "c1", *BASE[2:], "--drain-by-get", "admin"])
    assert exited.value.code == 2
