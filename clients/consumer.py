"""The consumer worker: receives from one queue through a failover list and records each
message as `receive ok` (docs/run-folder.md, history.jsonl) before accepting it.

    python -m clients.consumer --process c1 --urls amqp://127.0.0.1:P1,amqp://127.0.0.1:P2
        --nodes n1,n2 --queue lab --run-start-ns N [--prefetch CREDIT] [--drain-timeout S]
        [--drain-stall S] [--heartbeat S] [--drain-by-get USER:PASSWORD]

Credit is --prefetch, topped up when half is used. `redelivered` is true when the message's
delivery-count is above 0. After a reconnect consumption goes on.

`drain` on stdin: `drain invoke`, then rounds of AMQP link drain (credit granted with the
drain flag; a round ends when the broker has used or returned all credit). The first round
in which no message arrives confirms the queue empty: `drain ok`, exit 0. Not confirmed
within --drain-timeout: `drain info` with the reason, exit 0. `stop` on stdin: exit 0
without draining.

A round the broker leaves open (no message and no answer to the drain for --drain-stall
seconds, while it still holds credit) is recorded as `drain info` with what was left, and
the consumer gives up that link, opens a new one and drains again (a new `drain invoke`):
a consumer's last drain is the one the checker counts, within the same --drain-timeout.

With --drain-by-get (a broker whose link drain cannot be relied on: RabbitMQ 3.10's AMQP 1.0
plugin on a classic queue), `drain` closes the AMQP 1.0 link and drains the queue over AMQP
0-9-1 instead, `basic.get` after `basic.get` until the broker says it is empty
(clients/get_drain.py), with the same history.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from proton import Delivery, Link, Message, Receiver
from proton.reactor import Container

from clients.event_loop import call_later, run_worker, stderr_log
from clients.failover_link import FailoverLink
from clients.op_writer import OpWriter
from clients.options import ConnectionOptions, add_connection_arguments, connection_options

__all__ = ["Consumer", "ConsumerConfig", "main", "parse_args"]


@dataclass(frozen=True)
class ConsumerConfig:
    connection: ConnectionOptions
    prefetch: int
    drain_timeout_s: float
    drain_stall_s: float = 8.0
    drain_by_get: tuple[str, str] | None = None  # (user, password): drain over AMQP 0-9-1


def parse_args(argv: Sequence[str] | None = None) -> ConsumerConfig:
    """The consumer's command line; a bad value exits with status 2 and a message."""
    parser = argparse.ArgumentParser(
        prog="python -m clients.consumer",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_connection_arguments(parser)
    parser.add_argument("--prefetch", type=int, default=100, help="link credit")
    parser.add_argument("--drain-timeout", type=float, default=30.0, help="seconds, after drain")
    parser.add_argument(
        "--drain-stall",
        type=float,
        default=8.0,
        help="seconds a drain round may go unanswered before the link is renewed (0: never)",
    )
    parser.add_argument(
        "--drain-by-get",
        metavar="USER:PASSWORD",
        help="drain over AMQP 0-9-1 (basic.get until empty) as this user, not by link drain",
    )
    args = parser.parse_args(argv)
    by_get = None
    if args.drain_by_get is not None:
        user, sep, password = args.drain_by_get.partition(":")
        if not sep or not user:
            parser.error("--drain-by-get takes USER:PASSWORD")
        by_get = (user, password)
    if args.prefetch < 1:
        parser.error("--prefetch must be at least 1")
    if args.drain_timeout < 0:
        parser.error("--drain-timeout cannot be negative")
    if args.drain_stall < 0:
        parser.error("--drain-stall cannot be negative")
    return ConsumerConfig(
        connection=connection_options(args, parser),
        prefetch=args.prefetch,
        drain_timeout_s=args.drain_timeout,
        drain_stall_s=args.drain_stall,
        drain_by_get=by_get,
    )


def message_id_text(message_id: object) -> str | None:
    """A received message's id as the history's `value`."""
    if message_id is None or isinstance(message_id, str):
        return message_id
    if isinstance(message_id, bytes):
        return message_id.decode("utf-8", "replace")
    return str(message_id)


class Consumer:
    """Receives through a `FailoverLink`; drains on command."""

    def __init__(
        self,
        config: ConsumerConfig,
        writer: OpWriter,
        container: Container,
        log: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config
        self._clock = clock
        self._writer = writer
        self._container = container
        self._log = log
        self._prefetch = config.prefetch
        self._low_water = config.prefetch // 2
        self._message = Message()
        self._failover = FailoverLink(container, config.connection, "receiver", self, log)
        self._link: Receiver | None = None
        self._node: str | None = None
        self._finished = False
        self._draining = False
        self._round_open = False
        self._round_messages = 0
        self._round_credit = 0  # the credit the open round asked for
        self._last_answer = 0.0  # when the open round last got a message or a flow
        self._watching = False  # a stall check is scheduled
        self.drain_by_get_at: float | None = None  # when `drain` asked for a 0-9-1 drain

    def start(self) -> None:
        self._failover.start()

    def on_command(self, command: str) -> None:
        if command == "drain":
            self._drain()
        elif command == "stop":
            self._finish()
        else:
            self._log(f"ignoring the command {command!r}")

    def link_ready(self, link: Link, node: str) -> None:
        receiver = cast(Receiver, link)
        self._link = receiver
        self._node = node
        if self._draining:
            self._drain_round()
        else:
            receiver.flow(self._prefetch)

    def link_flow(self, link: Link) -> None:
        if self._draining:
            self._last_answer = self._clock()
            self._check_drain()

    def link_lost(self, node: str, reason: str) -> None:
        self._link = None
        self._round_open = False

    def delivery(self, delivery: Delivery) -> None:
        if delivery.partial or self._finished:
            return
        link = self._link
        if link is None:
            return
        if delivery.aborted:
            delivery.settle()
            return
        if not delivery.readable:
            return
        data = link.recv(delivery.pending)
        link.advance()
        if data is None:
            return
        message = self._message
        message.decode(data)
        self._writer.write(
            "ok",
            "receive",
            message_id_text(message.id),
            node=self._node,
            redelivered=message.delivery_count > 0,
        )
        delivery.update(Delivery.ACCEPTED)
        delivery.settle()
        if self._draining:
            self._round_messages += 1
            self._last_answer = self._clock()
            self._check_drain()
        elif link.credit <= self._low_water:
            link.flow(self._prefetch - link.credit)

    def _drain(self) -> None:
        if self._draining or self._finished:
            return
        self._draining = True
        self._writer.write("invoke", "drain", None, node=self._node)
        if self._config.drain_by_get is not None:  # after the link is closed (main)
            self.drain_by_get_at = self._clock()
            self._finish()
            return
        call_later(self._container, self._config.drain_timeout_s, self._drain_expired)
        if self._link is not None:
            self._drain_round()

    def _drain_round(self) -> None:
        link = self._link
        if link is None:
            return
        self._round_open = True
        self._round_messages = 0
        self._last_answer = self._clock()
        link.drain(max(0, self._prefetch - link.credit))
        self._round_credit = link.credit
        self._watch(self._config.drain_stall_s)

    def _watch(self, delay_s: float) -> None:
        if self._config.drain_stall_s > 0 and not self._watching:
            self._watching = True
            call_later(self._container, delay_s, self._stall_check)

    def _stall_check(self) -> None:
        """A round open with credit and unanswered for --drain-stall: give that link up."""
        self._watching = False
        link = self._link
        if link is None or not self._round_open or self._finished or not self._config.drain_stall_s:
            return
        quiet = self._clock() - self._last_answer
        if quiet < self._config.drain_stall_s:
            self._watch(self._config.drain_stall_s - quiet)
            return
        credit = link.credit
        reason = (
            f"drain round unanswered for {quiet:.1f} s on {self._node}: {self._round_messages} "
            f"of {self._round_credit} credit used, {credit} left, no flow from the broker; "
            "renewing the link"
        )
        self._log(reason)
        self._writer.write("info", "drain", None, node=self._node, error=reason)
        self._writer.write("invoke", "drain", None, node=self._node)
        self._round_open = False
        self._failover.renew(reason)

    def _check_drain(self) -> None:
        link = self._link
        if link is None or not self._round_open or self._finished or link.draining():
            return
        if self._round_messages == 0 and link.queued == 0:
            self._writer.write("ok", "drain", None, node=self._node)
            self._finish()
        else:
            self._drain_round()

    def _drain_expired(self) -> None:
        if self._finished:
            return
        timeout = self._config.drain_timeout_s
        if self._link is None:
            reason = f"no link to the queue; not drained within {timeout:g} s"
        else:
            reason = f"queue not confirmed empty within {timeout:g} s"
        self._writer.write("info", "drain", None, node=self._node, error=reason)
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
    log = stderr_log(process, writer.log_failed)
    consumer = Consumer(config, writer, container, log)
    status = run_worker(container, consumer)
    if status == 0 and config.drain_by_get is not None and consumer.drain_by_get_at is not None:
        from clients.get_drain import drain_by_get

        left = config.drain_timeout_s - (time.monotonic() - consumer.drain_by_get_at)
        user, password = config.drain_by_get
        addresses, queue = config.connection.addresses, config.connection.queue
        drain_by_get(addresses, queue, user, password, max(1.0, left), writer, log)
    return status


if __name__ == "__main__":
    sys.exit(main())
