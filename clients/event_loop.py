"""A worker's event loop: the runner's commands on stdin (`stop`, `drain`; end of file means
the runner is gone and the worker exits at once), timers, and running a worker to its end."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import Any, Protocol, cast

from proton import Condition, Event, Handler
from proton.handlers import IOHandler
from proton.reactor import Container

from clients.op_writer import RunnerGone, split_lines

__all__ = [
    "Cancellable",
    "CommandReader",
    "Worker",
    "call_later",
    "describe",
    "run_worker",
    "stderr_log",
]


_on_expired = IOHandler.on_selectable_expired


def _expired_unless_final(self: IOHandler, event: Event) -> None:
    """Proton's IO handler, except for a connection's selectable whose deadline comes after
    it was finalized (its transport gone): Qpid Proton's own handler then raises
    AttributeError out of the event loop (a race a busy machine meets when a node dies; the
    fix proposed upstream, apache/qpid-proton pull request 364, was never released), and the
    worker dies with its history unfinished. There is nothing left to update: skip it."""
    if getattr(event.selectable, "_transport", None) is None:
        return
    _on_expired(self, event)


IOHandler.on_selectable_expired = _expired_unless_final  # type: ignore[method-assign]


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


def stderr_log(
    process: str, on_failure: Callable[[OSError], None] | None = None
) -> Callable[[str], None]:
    """A diagnostic logger writing `process: message` lines to stderr (the runner's file
    workers/<process>.log). A line it cannot write (a full disk) is dropped and the first
    such failure goes to `on_failure`: the worker carries on, and the runner is told."""
    failed = False

    def log(message: str) -> None:
        nonlocal failed
        if failed:
            return
        try:
            print(f"{process}: {message}", file=sys.stderr, flush=True)
        except OSError as error:
            failed = True
            if on_failure is not None:
                on_failure(error)

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
