"""What the producer and consumer workers share with the runner and with the broker.

- The command line: the failover list (`--urls`, `--nodes`), the queue, the run's clock.
- stdout: one operation per line (formats.md section 2, without `index`), via `OpWriter`.
- stdin: the runner's commands, one a line (`stop`, `drain`), read inside the event loop by
  `CommandReader`; end of file means the runner is gone and the worker exits at once.
- `FailoverLink`: one AMQP link (sender or receiver) kept open through the failover list.

Errors: `RunnerGone` (stdout is closed) is the only exception raised on purpose; a broker
misbehaving is recorded as operations, never raised.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any, Literal, Protocol, TextIO, cast

from proton import (
    Condition,
    Connection,
    Delivery,
    Event,
    Handler,
    Link,
    Session,
    Terminus,
    Transport,
)
from proton.reactor import Container

from clients.workload import FailoverPolicy

__all__ = [
    "Cancellable",
    "CommandReader",
    "ConnectionOptions",
    "FailoverLink",
    "LinkUser",
    "OpF",
    "OpType",
    "OpWriter",
    "RunnerGone",
    "Target",
    "Worker",
    "add_connection_arguments",
    "call_later",
    "connection_options",
    "describe",
    "parse_positive",
    "run_worker",
    "split_lines",
    "stderr_log",
]

OpType = Literal["invoke", "ok", "fail", "info"]
OpF = Literal["send", "receive", "drain"]
LinkRole = Literal["sender", "receiver"]


class RunnerGone(Exception):
    """stdout was closed: nobody records the worker's operations any more."""


@dataclass(frozen=True)
class Target:
    """One entry of the failover list: a URL and the node behind it."""

    url: str
    node: str


@dataclass(frozen=True)
class ConnectionOptions:
    """The options every worker takes."""

    process: str
    targets: tuple[Target, ...]
    queue: str
    run_start_ns: int
    heartbeat_s: float


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `ConnectionOptions` to `parser`."""
    parser.add_argument("--process", required=True, help="this worker's name, e.g. p1 or c1")
    parser.add_argument("--urls", required=True, help="comma-separated AMQP URLs, tried in turn")
    parser.add_argument("--nodes", required=True, help="the node behind each URL, same order")
    parser.add_argument("--queue", required=True, help="the queue's address")
    parser.add_argument(
        "--run-start-ns", type=int, required=True, help="time.monotonic_ns() when the run began"
    )
    parser.add_argument(
        "--heartbeat", type=float, default=2.0, help="AMQP idle timeout in seconds (0 = none)"
    )


def connection_options(
    args: argparse.Namespace, parser: argparse.ArgumentParser
) -> ConnectionOptions:
    """The parsed `ConnectionOptions`; a bad value exits through `parser.error`."""
    urls = _names(args.urls)
    nodes = _names(args.nodes)
    if not urls:
        parser.error("--urls names no URL")
    if len(urls) != len(nodes):
        parser.error(f"--urls has {len(urls)} entries but --nodes has {len(nodes)}")
    if not args.process:
        parser.error("--process is empty")
    if args.heartbeat < 0:
        parser.error("--heartbeat cannot be negative")
    return ConnectionOptions(
        process=args.process,
        targets=tuple(Target(url, node) for url, node in zip(urls, nodes, strict=True)),
        queue=args.queue,
        run_start_ns=args.run_start_ns,
        heartbeat_s=args.heartbeat,
    )


class OpWriter:
    """Writes operations as JSON lines, one flushed write each. Field order: time, process,
    type, f, value, then node, seq, redelivered, error when given."""

    def __init__(
        self,
        process: str,
        run_start_ns: int,
        stream: TextIO,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._head = ', "process": ' + encode_basestring(process) + ', "type": "'
        self._start = run_start_ns
        self._stream = stream
        self._clock = clock

    def write(
        self,
        type_: OpType,
        f: OpF,
        value: str | None,
        *,
        node: str | None = None,
        seq: int | None = None,
        redelivered: bool | None = None,
        error: str | None = None,
    ) -> None:
        line = (
            '{"time": '
            + str(self._clock() - self._start)
            + self._head
            + type_
            + '", "f": "'
            + f
            + '", "value": '
            + ("null" if value is None else encode_basestring(value))
        )
        if node is not None:
            line += ', "node": ' + encode_basestring(node)
        if seq is not None:
            line += ', "seq": ' + str(seq)
        if redelivered is not None:
            line += ', "redelivered": ' + ("true" if redelivered else "false")
        if error is not None:
            line += ', "error": ' + encode_basestring(error)
        try:
            self._stream.write(line + "}\n")
            self._stream.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise RunnerGone(str(exc)) from exc


def split_lines(buffer: bytes) -> tuple[list[str], bytes]:
    """The complete, non-blank lines in `buffer` (stripped), and the incomplete rest."""
    *complete, rest = buffer.split(b"\n")
    lines = [text for raw in complete if (text := raw.decode("utf-8", "replace").strip())]
    return lines, rest


class CommandReader:
    """Reads commands from a file descriptor (stdin) as a selectable of the proton event loop,
    so that commands are handled on the loop's thread like any other event."""

    _transport = None  # proton's IO handler looks for a transport on every selectable

    def __init__(
        self, fd: int, on_command: Callable[[str], None], on_eof: Callable[[], None]
    ) -> None:
        self._fd = fd
        self._on_command = on_command
        self._on_eof = on_eof
        self._rest = b""

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        """The event loop lets go of the descriptor; it stays open."""

    def on_selectable_init(self, event: Event) -> None:
        selectable = cast(Any, event.context)
        selectable.reading = True
        selectable.update()

    def on_selectable_readable(self, event: Event) -> None:
        try:
            data = os.read(self._fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._on_eof()
            return
        lines, self._rest = split_lines(self._rest + data)
        for line in lines:
            self._on_command(line)


class Cancellable(Protocol):
    """A scheduled task of the event loop."""

    def cancel(self) -> None: ...


class _Call(Handler):
    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn = fn

    def on_timer_task(self, event: Event) -> None:
        self._fn()


def call_later(container: Container, delay_s: float, fn: Callable[[], None]) -> Cancellable:
    """Run `fn` on the event loop after `delay_s`."""
    return container.schedule(delay_s, _Call(fn))


def describe(condition: Condition | None, default: str) -> str:
    """An AMQP error condition as text: `name: description`."""
    if condition is None:
        return default
    if condition.description:
        return f"{condition.name}: {condition.description}"
    return str(condition.name)


class LinkUser(Protocol):
    """What a worker does with the link `FailoverLink` keeps open."""

    def link_ready(self, link: Link, node: str) -> None:
        """A link is attached on a connection to `node`."""

    def link_flow(self, link: Link) -> None:
        """The link's credit changed."""

    def delivery(self, delivery: Delivery) -> None:
        """A delivery on the link arrived or changed."""

    def link_lost(self, node: str, reason: str) -> None:
        """The ready link to `node` is gone; another attempt follows."""


class _Attempt(Handler):
    """One connection attempt to one target: its events, until it is lost."""

    def __init__(self, owner: FailoverLink, target: Target) -> None:
        self.owner = owner
        self.target = target
        self.alive = True
        self.ready = False
        self.error: str | None = None
        self.connection: Connection | None = None
        self.timer: Cancellable | None = None
        self.flow: Callable[[Link], None] = owner.user.link_flow
        self.deliver: Callable[[Delivery], None] = owner.user.delivery

    def on_link_remote_open(self, event: Event) -> None:
        link = cast(Link, event.link)
        terminus = link.remote_target if link.is_sender else link.remote_source
        if self.alive and not self.ready and terminus.type != Terminus.UNSPECIFIED:
            self.owner._ready(self, link)

    def on_link_flow(self, event: Event) -> None:
        if self.ready and self.alive:
            self.flow(cast(Link, event.link))

    def on_delivery(self, event: Event) -> None:
        if self.ready and self.alive:
            self.deliver(cast(Delivery, event.delivery))

    def on_link_remote_close(self, event: Event) -> None:
        link = cast(Link, event.link)
        self.owner._lost(self, describe(link.remote_condition, "link detached by the broker"))

    def on_session_remote_close(self, event: Event) -> None:
        session = cast(Session, event.session)
        self.owner._lost(self, describe(session.remote_condition, "session ended by the broker"))

    def on_connection_remote_close(self, event: Event) -> None:
        connection = cast(Connection, event.connection)
        reason = describe(connection.remote_condition, "connection closed by the broker")
        self.owner._lost(self, reason, polite=True)

    def on_transport_error(self, event: Event) -> None:
        transport = cast(Transport, event.transport)
        self.error = describe(transport.condition, "transport error")

    def on_transport_closed(self, event: Event) -> None:
        self.owner._lost(self, self.error or "connection closed")

    def on_timer_task(self, event: Event) -> None:
        if not self.ready:
            self.owner._lost(self, "no link within the connect timeout")

    def abandon(self, polite: bool) -> None:
        """Close the connection; unless `polite`, drop the socket without waiting."""
        if self.timer is not None:
            self.timer.cancel()
        conn = self.connection
        if conn is None:
            return
        conn.close()
        transport = conn.transport
        if not polite and transport is not None:
            transport.close_tail()
            transport.close_head()


class FailoverLink:
    """Keeps one link to `options.queue` open through the failover list: a connection that is
    refused, closed (e.g. `amqp:connection:forced` by a node that is not the master), times out
    or loses its link makes it try the next URL, as `FailoverPolicy` says."""

    def __init__(
        self,
        container: Container,
        options: ConnectionOptions,
        role: LinkRole,
        user: LinkUser,
        log: Callable[[str], None],
        policy: FailoverPolicy | None = None,
    ) -> None:
        self.user = user
        self._container = container
        self._options = options
        self._role = role
        self._log = log
        self._policy = policy or FailoverPolicy(len(options.targets))
        self._current: _Attempt | None = None
        self._closing: Callable[[], None] | None = None
        self._connect_timeout_s = options.heartbeat_s if options.heartbeat_s > 0 else 5.0

    def start(self) -> None:
        self._connect(self._policy.index)

    def close(self, done: Callable[[], None], grace_s: float = 1.0) -> None:
        """Close the connection, waiting up to `grace_s` for the broker to close its end
        (so that settlements sent before reach it), then call `done` once."""
        if self._closing is not None:
            return
        self._closing = done
        current = self._current
        if current is None or not current.ready:
            if current is not None:
                current.alive = False
                current.abandon(polite=False)
            self._finish_close()
            return
        current.abandon(polite=True)
        call_later(self._container, grace_s, self._finish_close)

    def _finish_close(self) -> None:
        done = self._closing
        if done is not None:
            self._closing = lambda: None
            done()

    def _connect(self, index: int) -> None:
        if self._closing is not None:
            return
        target = self._options.targets[index]
        attempt = _Attempt(self, target)
        self._current = attempt
        heartbeat = self._options.heartbeat_s or None
        conn = self._container.connect(
            url=target.url, handler=attempt, reconnect=False, heartbeat=heartbeat
        )
        attempt.connection = conn
        name = f"{self._options.process}-{self._role}"
        if self._role == "sender":
            self._container.create_sender(conn, target=self._options.queue, name=name)
        else:
            self._container.create_receiver(conn, source=self._options.queue, name=name)
        attempt.timer = self._container.schedule(self._connect_timeout_s, attempt)

    def _ready(self, attempt: _Attempt, link: Link) -> None:
        attempt.ready = True
        if attempt.timer is not None:
            attempt.timer.cancel()
        self._policy.connected()
        self._log(f"link ready on {attempt.target.node} ({attempt.target.url})")
        self.user.link_ready(link, attempt.target.node)

    def _lost(self, attempt: _Attempt, reason: str, polite: bool = False) -> None:
        if not attempt.alive:
            return
        attempt.alive = False
        attempt.abandon(polite)
        if self._current is attempt:
            self._current = None
        if self._closing is not None:
            self._finish_close()
            return
        node = attempt.target.node
        if attempt.ready:
            self._log(f"lost the link on {node}: {reason}")
            self.user.link_lost(node, reason)
        else:
            self._log(f"no link on {node}: {reason}")
        index, delay = self._policy.next()
        if delay == 0:
            self._connect(index)
        else:
            call_later(self._container, delay, lambda: self._connect(index))


class Worker(Protocol):
    """A worker as `run_worker` drives it."""

    def start(self) -> None:
        """Begin: connect. Called on the event loop before anything else."""

    def on_command(self, command: str) -> None:
        """A command from the runner."""


class _Starter(Handler):
    def __init__(self, worker: Worker) -> None:
        self._worker = worker

    def on_reactor_init(self, event: Event) -> None:
        self._worker.start()


def _exit_now() -> None:
    os._exit(0)


def stderr_log(process: str) -> Callable[[str], None]:
    """A diagnostic logger writing `process: message` lines to stderr."""

    def log(message: str) -> None:
        print(f"{process}: {message}", file=sys.stderr, flush=True)

    return log


def run_worker(container: Container, worker: Worker, stdin_fd: int = 0) -> int:
    """Run `worker` on `container` until it stops the container; returns the exit status.
    End of file on stdin, or stdout closed, ends the process at once without output."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    container.handler = _Starter(worker)
    reader = CommandReader(stdin_fd, worker.on_command, _exit_now)
    container.selectable(handler=reader)  # type: ignore[arg-type]
    try:
        container.run()
    except RunnerGone:
        _exit_now()
    except KeyboardInterrupt:
        return 130
    return 0


def parse_positive(parser: argparse.ArgumentParser, name: str, value: float) -> None:
    """Exit through `parser.error` unless `value` > 0."""
    if value <= 0:
        parser.error(f"{name} must be positive")
