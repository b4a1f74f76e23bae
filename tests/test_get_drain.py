"""The drain over AMQP 0-9-1 (clients.get_drain) against a fake broker: what it records and
when it calls the queue empty."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from clients.get_drain import _confirmed_empty, _Drain, _emptied, queue_name


class Queue:
    """A queue's messages, and those its consumers were given but never acknowledged."""

    def __init__(self, messages: list[str]) -> None:
        self.messages = list(messages)


class Channel:
    """A channel on `queue`. A consumer is given the queue's head (`delivers`: it reaches the
    client; otherwise the broker takes up to `takes` messages for it and delivers none of
    them, which go back to the queue when the channel closes); gets answer one message a
    call, then empty."""

    def __init__(self, queue: Queue, delivers: bool = True, takes: int = 0) -> None:
        self.queue, self.delivers, self.takes = queue, delivers, takes
        self.taken: list[str] = []
        self.acked = 0
        self.gets = 0
        self.quiets = 0
        self.tag = 0

    def _message(self, mid: str) -> tuple[Any, Any, bytes]:
        self.tag += 1
        return SimpleNamespace(delivery_tag=self.tag), SimpleNamespace(message_id=mid), b""

    def consume(self, name: str, inactivity_timeout: float) -> Iterator[tuple[Any, Any, Any]]:
        if not self.delivers:
            self.taken, self.queue.messages = (
                self.queue.messages[: self.takes],
                self.queue.messages[self.takes :],
            )
        while True:
            if self.delivers and self.queue.messages:
                yield self._message(self.queue.messages.pop(0))
            else:
                self.quiets += 1
                yield None, None, None

    def basic_get(self, name: str, auto_ack: bool) -> tuple[Any, Any, Any]:
        self.gets += 1
        if self.queue.messages:
            return self._message(self.queue.messages.pop(0))
        return None, None, None

    def basic_ack(self, tag: int) -> None:
        self.acked += 1

    def cancel(self) -> int:
        return 0

    def close(self) -> None:
        self.queue.messages[:0] = self.taken
        self.taken = []


class Connection:
    def __init__(self, queue: Queue) -> None:
        self.queue = queue

    def channel(self) -> Channel:
        return Channel(self.queue)


def _clock() -> Any:
    ticks = iter(range(1_000_000))
    return lambda: float(next(ticks))


def _drain(channel: Channel, deadline: float = 100_000.0) -> tuple[bool, list[str]]:
    seen: list[str] = []
    drain = _Drain("lab", deadline, _clock(), lambda _m, props: seen.append(props.message_id))
    emptied = _emptied(channel, drain) and _confirmed_empty(
        Connection(channel.queue), channel, drain
    )
    return emptied, seen


def _ids(n: int, first: int = 0) -> list[str]:
    return [f"p1-{i}" for i in range(first, first + n)]


def test_a_queue_that_gives_its_consumer_nothing_is_drained_by_gets_without_a_quiet_each() -> None:
    channel = Channel(Queue(_ids(50)), delivers=False)
    emptied, seen = _drain(channel)
    assert emptied and seen == _ids(50) and channel.acked == 50
    # Two quiets (the first, then the one after the gets that found messages), not one a message.
    assert channel.quiets == 2 and channel.gets == 52


def test_what_a_consumer_was_given_and_never_got_is_drained_once_its_channel_closes() -> None:
    channel = Channel(Queue(_ids(700)), delivers=False, takes=500)
    emptied, seen = _drain(channel)
    assert emptied and sorted(seen) == sorted(_ids(700))


def test_what_the_consumer_is_given_is_recorded_and_a_first_get_empty_ends_the_drain() -> None:
    channel = Channel(Queue(["p1-1", "p2-1"]))
    emptied, seen = _drain(channel)
    assert emptied and seen == ["p1-1", "p2-1"] and channel.gets == 1


def test_the_drain_stops_at_its_deadline_and_says_so() -> None:
    channel = Channel(Queue(_ids(100_000)), delivers=False)
    emptied, seen = _drain(channel, deadline=5_000.0)
    assert not emptied and 0 < len(seen) < 5_000


def test_a_queue_is_named_from_its_amqp_1_0_address() -> None:
    assert queue_name("/amq/queue/lab") == "lab" and queue_name("lab") == "lab"
