"""The throughput table's load (P1): many producer and consumer connections in one process,
counted, not recorded.

    python -m clients.bench_load --urls amqp://127.0.0.1:P1,amqp://127.0.0.1:P2 --queue Q
        --producers N --consumers N [--size BYTES] [--window MAX_IN_FLIGHT]

A table of throughput needs no history: one worker process per client, each writing a JSON
line per operation that the lab then parses, costs the clients more CPU than the broker
spends, so on two cores the clients, not the broker, set the figure. Here every client is a
connection of one event loop: each producer keeps `--window` durable messages in flight
(ids `<token>-<n>`, unique to this process), each consumer accepts what arrives and renews
its credit. Connections go to the first URL and, when refused or lost, to the next.

stdin commands: `count` prints one JSON line, {"acknowledged": accepted sends,
"received": accepted deliveries, "cpu_s": this process's CPU seconds, "links": links the
broker has attached}; end of file ends the process at once.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from proton import Connection, Delivery, Event, Handler, Link, Sender
from proton.reactor import Container

from clients.event_loop import call_later, run_worker, stderr_log
from clients.producer import MessageEncoder

__all__ = ["LoadConfig", "main", "parse_args"]

RECONNECT_DELAY_S = 0.2


@dataclass(frozen=True)
class LoadConfig:
    urls: tuple[str, ...]
    queue: str
    producers: int
    consumers: int
    size: int
    window: int


def parse_args(argv: Sequence[str] | None = None) -> LoadConfig:
    """The command line; a bad value exits with status 2 and a message."""
    parser = argparse.ArgumentParser(
        prog="python -m clients.bench_load",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--urls", required=True, help="comma-separated AMQP URLs, tried in turn")
    parser.add_argument("--queue", required=True, help="the queue's address")
    parser.add_argument("--producers", type=int, required=True, help="sending connections")
    parser.add_argument("--consumers", type=int, required=True, help="receiving connections")
    parser.add_argument("--size", type=int, default=100, help="body size in bytes")
    parser.add_argument("--window", type=int, default=100, help="messages in flight per producer")
    args = parser.parse_args(argv)
    urls = tuple(url for url in args.urls.split(",") if url)
    if not urls:
        parser.error("--urls names no URL")
    for name in ("producers", "consumers", "size"):
        if getattr(args, name) < 0:
            parser.error(f"--{name} cannot be negative")
    if args.window < 1:
        parser.error("--window must be at least 1")
    return LoadConfig(urls, args.queue, args.producers, args.consumers, args.size, args.window)


class _Load(Handler):
    """Every connection's handler; counts what the broker accepted and what arrived."""

    def __init__(self, config: LoadConfig, container: Container) -> None:
        super().__init__()
        self._config = config
        self._container = container
        self._encoder = MessageEncoder(config.size)
        self._token = secrets.token_hex(4)
        self._sequence = 0
        self._in_flight: dict[Link, int] = {}
        self._url_of: dict[Connection, int] = {}
        self._log = stderr_log("bench-load")
        self.acknowledged = 0
        self.received = 0

    def start(self) -> None:
        for number in range(self._config.producers):
            self._open(f"p{number}", sender=True, index=0)
        for number in range(self._config.consumers):
            self._open(f"c{number}", sender=False, index=0)

    def _open(self, name: str, *, sender: bool, index: int) -> None:
        url = self._config.urls[index % len(self._config.urls)]
        connection = self._container.connect(url=url, handler=self, reconnect=False)
        self._url_of[connection] = index
        link_name = f"bench-{self._token}-{name}"
        if sender:
            self._container.create_sender(connection, target=self._config.queue, name=link_name)
        else:
            receiver = self._container.create_receiver(
                connection, source=self._config.queue, name=link_name
            )
            receiver.flow(self._config.window)

    def _reopen(self, event: Event) -> None:
        connection = event.connection
        if connection is None or connection not in self._url_of:
            return
        index = self._url_of.pop(connection)
        for link in _links(connection):
            self._in_flight.pop(link, None)
            self._open_later(link.name.rsplit("-", 1)[-1], link.is_sender, index + 1)
        connection.close()

    def _open_later(self, name: str, sender: bool, index: int) -> None:
        call_later(
            self._container, RECONNECT_DELAY_S, lambda: self._open(name, sender=sender, index=index)
        )

    def on_transport_error(self, event: Event) -> None:
        self._reopen(event)

    def on_connection_remote_close(self, event: Event) -> None:
        self._reopen(event)

    def on_link_remote_close(self, event: Event) -> None:
        self._reopen(event)

    def on_link_flow(self, event: Event) -> None:
        link = event.link
        if link is not None and link.is_sender:
            self._fill(cast(Sender, link))

    def _fill(self, sender: Sender) -> None:
        in_flight = self._in_flight.get(sender, 0)
        while sender.credit > 0 and in_flight < self._config.window:
            self._sequence += 1
            sender.delivery(str(self._sequence))
            sender.send(self._encoder.encode(f"{self._token}-{self._sequence}"))
            sender.advance()
            in_flight += 1
        self._in_flight[sender] = in_flight

    def on_delivery(self, event: Event) -> None:
        delivery, link = event.delivery, event.link
        if delivery is None or link is None:
            return
        if link.is_sender:
            if delivery.remote_state is None:
                return
            if delivery.remote_state == Delivery.ACCEPTED:
                self.acknowledged += 1
            delivery.settle()
            self._in_flight[link] = self._in_flight.get(link, 1) - 1
            self._fill(cast(Sender, link))
            return
        if not delivery.readable or delivery.partial:
            return
        link.recv(delivery.pending)
        delivery.update(Delivery.ACCEPTED)
        delivery.settle()
        self.received += 1
        if link.credit < self._config.window // 2:
            link.flow(self._config.window - link.credit)

    def on_command(self, command: str) -> None:
        if command.strip() == "count":
            counts = {
                "acknowledged": self.acknowledged,
                "received": self.received,
                "cpu_s": time.process_time(),
                "links": self._active_links(),
            }
            sys.stdout.write(json.dumps(counts) + "\n")
            sys.stdout.flush()

    def _active_links(self) -> int:
        return sum(
            1
            for connection in self._url_of
            for link in _links(connection)
            if link.state & Link.REMOTE_ACTIVE
        )


def _links(connection: Connection) -> list[Link]:
    found: list[Link] = []
    link = connection.link_head(0)
    while link is not None:
        found.append(link)
        link = link.next(0)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    container = Container()
    container.container_id = f"bench-load-{os.getpid()}"
    load = _Load(config, container)
    return run_worker(container, cast(Any, load))


if __name__ == "__main__":
    sys.exit(main())
