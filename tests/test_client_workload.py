"""The workers' pure parts: command lines, op lines, failover, window, rate, message encoding."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pytest
from client_helpers import BASE, writer_on
from proton import Message

from clients import consumer as consumer_mod
from clients import producer as producer_mod
from clients.consumer import message_id_text
from clients.op_writer import split_lines
from clients.options import Address
from clients.producer import MessageEncoder
from clients.workload import Backoff, FailoverPolicy, Pacer, SendBook

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


class _Recorder:
    """A proton Container stand-in that records the links a FailoverLink opens."""

    def __init__(self) -> None:
        self.links: list[tuple[str, str]] = []

    def connect(self, **_kwargs: object) -> object:
        return SimpleNamespace(close=lambda: None, transport=None)

    def create_sender(self, _conn: object, target: str, name: str, options: object) -> None:
        self.links.append((target, name))

    def create_receiver(self, _conn: object, source: str, name: str) -> None:
        self.links.append((source, name))

    def schedule(self, _delay: float, _handler: object) -> None:
        return None


@pytest.mark.parametrize("role", ["sender", "receiver"])
def test_every_attempt_opens_its_link_under_a_name_of_its_own(role: str) -> None:
    """An abandoned attempt's link may still be the broker's: the next attempt must not need
    to take it over (Broker-J can take longer than the connect timeout to do that)."""
    from clients.failover_link import FailoverLink
    from clients.options import ConnectionOptions

    addresses = (Address("amqp://127.0.0.1:1", "n1"), Address("amqp://127.0.0.1:2", "n2"))
    options = ConnectionOptions("p1", addresses, "lab", 0, heartbeat_s=2.0)
    container = _Recorder()
    user = SimpleNamespace(
        link_ready=print, link_flow=print, delivery=print, link_lost=lambda *_: None
    )
    failover = FailoverLink(container, options, role, user, log=lambda _line: None)  # type: ignore[arg-type]
    failover.start()
    for _ in range(2):  # each attempt times out without a link: the next URL at once
        attempt = failover._current
        assert attempt is not None
        attempt.on_timer_task(None)  # type: ignore[arg-type]
    names = [name for _, name in container.links]
    assert names == [f"p1-{role}-1", f"p1-{role}-2", f"p1-{role}-3"]
    assert {queue for queue, _ in container.links} == {"lab"}
