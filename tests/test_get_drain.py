"""The drain over AMQP 0-9-1 (clients.get_drain) against a fake channel: what it records and
when it calls the queue empty."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from clients.get_drain import _emptied, queue_name


class Channel:
    """A channel whose consumer is given `delivered` and whose gets answer `gettable`, one
    message a call, then empty."""

    def __init__(self, delivered: list[str], gettable: list[str]) -> None:
        self.delivered, self.gettable = list(delivered), list(gettable)
        self.acked: list[int] = []
        self.gets = 0
        self.quiets = 0
        self.tag = 0

    def _message(self, mid: str) -> tuple[Any, Any, bytes]:
        self.tag += 1
        return SimpleNamespace(delivery_tag=self.tag), SimpleNamespace(message_id=mid), b""

    def consume(self, name: str, inactivity_timeout: float) -> Iterator[tuple[Any, Any, Any]]:
        while True:
            if self.delivered:
                yield self._message(self.delivered.pop(0))
            else:
                self.quiets += 1
                yield None, None, None

    def basic_get(self, name: str, auto_ack: bool) -> tuple[Any, Any, Any]:
        self.gets += 1
        return self._message(self.gettable.pop(0)) if self.gettable else (None, None, None)

    def basic_ack(self, tag: int) -> None:
        self.acked.append(tag)

    def cancel(self) -> int:
        return 0


def _drain(channel: Channel) -> tuple[bool, list[str]]:
    seen: list[str] = []
    ticks = iter(range(10_000))
    emptied = _emptied(
        channel,
        "lab",
        deadline=1_000.0,
        clock=lambda: float(next(ticks)),
        record=lambda _m, properties: seen.append(properties.message_id),
    )
    return emptied, seen


def test_a_queue_that_gives_its_consumer_nothing_is_drained_by_gets_without_a_quiet_each() -> None:
    channel = Channel([], [f"p1-{i}" for i in range(50)])
    emptied, seen = _drain(channel)
    assert emptied and seen == [f"p1-{i}" for i in range(50)]
    assert len(channel.acked) == 50
    # Two quiets (the first, then the one after the gets that found messages), not one a message.
    assert channel.quiets == 2 and channel.gets == 52


def test_what_the_consumer_is_given_is_recorded_and_a_first_get_empty_ends_the_drain() -> None:
    channel = Channel(["p1-1", "p2-1"], [])
    emptied, seen = _drain(channel)
    assert emptied and seen == ["p1-1", "p2-1"] and channel.gets == 1


def test_the_drain_stops_at_its_deadline_and_says_so() -> None:
    channel = Channel([], [f"p1-{i}" for i in range(100_000)])
    emptied, seen = _drain(channel)
    assert not emptied and 0 < len(seen) < 10_000


def test_a_queue_is_named_from_its_amqp_1_0_address() -> None:
    assert queue_name("/amq/queue/lab") == "lab" and queue_name("lab") == "lab"
