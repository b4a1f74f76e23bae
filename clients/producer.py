"""The producer worker: sends durable messages to one queue through a failover list and
records each send as an `invoke` followed by `ok`, `fail` or `info` (history.jsonl in
docs/run-folder.md).

    python -m clients.producer --process p1 --urls amqp://127.0.0.1:P1,amqp://127.0.0.1:P2
        --nodes n1,n2 --queue lab --run-start-ns N [--rate MSGS_PER_S] [--size BYTES]
        [--window MAX_IN_FLIGHT] [--count MAX_MESSAGES] [--stop-timeout S] [--heartbeat S]

Message ids are `<process>-<seq>`, seq counting from 1. Outcomes: accepted -> `ok`;
rejected, released or modified -> `fail`; the link or connection lost while the message is
unsettled -> `info` "connection lost", and the message is re-sent with the same id (a new
`invoke`) after the reconnect, before any new message. A message is invoked only when it
goes out on a link, so having no link delays sends and never fails them.

`stop` on stdin: no new messages; outcomes are awaited, and re-sends go on, for up to
--stop-timeout; each message then still sent without an outcome gets `info` "no outcome
before stop" (a message waiting for its re-send already has its `info`); exit 0.
With --count, the producer idles once all its messages have outcomes, until `stop`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from proton import Delivery, Link, Message, Sender
from proton.reactor import Container

from clients.event_loop import Cancellable, call_later, describe, run_worker, stderr_log
from clients.failover_link import FailoverLink
from clients.op_writer import OpType, OpWriter
from clients.options import ConnectionOptions, add_connection_arguments, connection_options
from clients.workload import Pacer, SendBook

__all__ = ["MessageEncoder", "Producer", "ProducerConfig", "main", "parse_args"]

CONNECTION_LOST = "connection lost"
NO_OUTCOME_BEFORE_STOP = "no outcome before stop"


@dataclass(frozen=True)
class ProducerConfig:
    connection: ConnectionOptions
    rate: float
    size: int
    window: int
    count: int | None
    stop_timeout_s: float
    durable: bool = True
    replicate: str | None = None  # qpid.replicate, given when the queue is declared


def parse_args(argv: Sequence[str] | None = None) -> ProducerConfig:
    """The producer's command line; a bad value exits with status 2 and a message."""
    parser = argparse.ArgumentParser(
        prog="python -m clients.producer",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_connection_arguments(parser)
    parser.add_argument("--rate", type=float, default=0.0, help="messages/s (0 = no limit)")
    parser.add_argument("--size", type=int, default=100, help="body size in bytes")
    parser.add_argument("--window", type=int, default=100, help="messages in flight at most")
    parser.add_argument("--count", type=int, default=None, help="messages to send at most")
    parser.add_argument("--stop-timeout", type=float, default=10.0, help="seconds, after stop")
    parser.add_argument(
        "--non-durable", action="store_true", help="send non-durable messages (default: durable)"
    )
    parser.add_argument(
        "--replicate",
        choices=("none", "configuration", "all"),
        help="declare the queue with this qpid.replicate (a node property of the link's target)",
    )
    args = parser.parse_args(argv)
    if args.rate < 0:
        parser.error("--rate cannot be negative")
    if args.size < 0:
        parser.error("--size cannot be negative")
    if args.window < 1:
        parser.error("--window must be at least 1")
    if args.count is not None and args.count < 0:
        parser.error("--count cannot be negative")
    if args.stop_timeout < 0:
        parser.error("--stop-timeout cannot be negative")
    return ProducerConfig(
        connection=connection_options(args, parser),
        rate=args.rate,
        size=args.size,
        window=args.window,
        count=args.count,
        stop_timeout_s=args.stop_timeout,
        durable=not args.non_durable,
        replicate=args.replicate,
    )


class MessageEncoder:
    """Encodes the lab's messages (durable unless asked, id, a body of `size` bytes). Proton
    encodes a message in ~15 us; here it is encoded once per id length with two placeholder
    ids, and each message splices its id into the bytes where the placeholders differ."""

    def __init__(self, size: int, durable: bool = True) -> None:
        self._body = b"x" * size
        self._durable = durable
        self._templates: dict[int, tuple[bytes, bytes]] = {}

    def _encode(self, message_id: str) -> bytes:
        message = Message(id=message_id, body=self._body, durable=self._durable)
        return cast(bytes, message.encode())

    def _template(self, length: int) -> tuple[bytes, bytes]:
        first = self._encode("a" * length)
        second = self._encode("b" * length)
        start = next(i for i, (x, y) in enumerate(zip(first, second, strict=True)) if x != y)
        return first[:start], first[start + length :]

    def encode(self, message_id: str) -> bytes:
        raw = message_id.encode()
        template = self._templates.get(len(raw))
        if template is None:
            if len(raw) != len(message_id):
                return self._encode(message_id)
            template = self._templates[len(raw)] = self._template(len(raw))
        return template[0] + raw + template[1]


class Producer:
    """Sends through a `FailoverLink`, keeping its messages in a `SendBook`."""

    def __init__(
        self,
        config: ProducerConfig,
        writer: OpWriter,
        container: Container,
        log: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config
        self._writer = writer
        self._container = container
        self._log = log
        self._clock = clock
        self._prefix = config.connection.process + "-"
        self._encoder = MessageEncoder(config.size, config.durable)
        self._book = SendBook(config.window, config.count)
        self._pacer = Pacer(config.rate, clock())
        properties = {} if config.replicate is None else {"qpid.replicate": config.replicate}
        self._failover = FailoverLink(
            container, config.connection, "sender", self, log, node_properties=properties
        )
        self._link: Sender | None = None
        self._node: str | None = None
        self._stopping = False
        self._finished = False
        self._pace_task: Cancellable | None = None

    def start(self) -> None:
        self._failover.start()

    def on_command(self, command: str) -> None:
        if command == "stop":
            self._stop()
        else:
            self._log(f"ignoring the command {command!r}")

    def link_ready(self, link: Link, node: str) -> None:
        self._link = cast(Sender, link)
        self._node = node
        self._pump()

    def link_flow(self, link: Link) -> None:
        self._pump()

    def link_lost(self, node: str, reason: str) -> None:
        self._link = None
        write = self._writer.write
        for seq in self._book.connection_lost():
            write(
                "info", "send", self._prefix + str(seq), node=node, seq=seq, error=CONNECTION_LOST
            )

    def delivery(self, delivery: Delivery) -> None:
        state = delivery.remote_state
        error: str | None = None
        type_: OpType
        if state == Delivery.ACCEPTED:
            type_ = "ok"
        elif state == Delivery.REJECTED:
            type_, error = "fail", describe(delivery.remote.condition, "rejected")
        elif state == Delivery.RELEASED:
            type_, error = "fail", "released"
        elif state == Delivery.MODIFIED:
            type_, error = "fail", "modified"
        elif delivery.settled:
            type_, error = "info", "settled without an outcome"
        else:
            return
        seq = int(delivery.tag)
        delivery.settle()
        if self._finished or not self._book.settle(seq):
            return
        self._writer.write(
            type_,
            "send",
            self._prefix + str(seq),
            node=self._node,
            seq=seq,
            error=error,
        )
        if self._stopping and self._book.idle:
            self._finish()
        else:
            self._pump()

    def _pump(self) -> None:
        link = self._link
        if link is None or self._finished:
            return
        book = self._book
        while link.credit > 0:
            seq = book.take_resend()
            if seq is None:
                if self._stopping:
                    return
                if not self._pacer.unlimited and not self._paced():
                    return
                seq = book.take_new()
                if seq is None:
                    return
            message_id = self._prefix + str(seq)
            self._writer.write("invoke", "send", message_id, node=self._node, seq=seq)
            link.delivery(str(seq))
            link.stream(self._encoder.encode(message_id))
            link.advance()

    def _paced(self) -> bool:
        """Whether a new message may go now; if not, wake up when one may."""
        if self._book.can_start_new:
            now = self._clock()
            if self._pacer.take(now):
                return True
            if self._pace_task is None:
                self._pace_task = call_later(self._container, self._pacer.wait(now), self._wake)
        return False

    def _wake(self) -> None:
        self._pace_task = None
        self._pump()

    def _stop(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        if self._book.idle:
            self._finish()
        else:
            call_later(self._container, self._config.stop_timeout_s, self._stop_expired)

    def _stop_expired(self) -> None:
        if self._finished:
            return
        for seq in self._book.abandon():
            self._writer.write(
                "info",
                "send",
                self._prefix + str(seq),
                node=self._node,
                seq=seq,
                error=NO_OUTCOME_BEFORE_STOP,
            )
        self._finish()

    def _finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        self._failover.close(self._container.stop)


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    process = config.connection.process
    writer = OpWriter(process, config.connection.run_start_ns, sys.stdout)
    container = Container()
    return run_worker(container, Producer(config, writer, container, stderr_log(process)))


if __name__ == "__main__":
    sys.exit(main())
