"""Guards around python-qpid-proton's IO (0.39–0.40), installed once, before the reactor runs.

A race: when a client connection is aborted, proton may terminate the connection's
selectable (dropping its transport) while a timer for that selectable is already due;
`IOHandler.on_selectable_expired` then calls `update` with no transport and the reactor
thread dies with an AttributeError. A timer on a selectable that has no transport any
more has nothing left to do, so the guard skips it.

A limit: proton waits on its sockets with `select()`, which cannot watch a descriptor
above 1023 — the 1021st idle client killed the node ("filedescriptor out of range in
select()"). The guard waits with `poll()` instead, which has no such limit.

A queue: proton listens with a backlog of 10. Clients that connect faster than the reactor
accepts (a burst of reconnects, or a flood) find it full; the kernel drops their SYN and
they wait a second or more to retry. The guard listens with a backlog of LISTEN_BACKLOG.

A pace: proton accepts one connection per turn of the reactor, and a turn costs time in
proportion to the sockets it watches, so a thousand clients arriving at once took seconds
to get in. The guard accepts up to ACCEPT_BATCH per turn. When accept() fails for want of
descriptors or memory (EMFILE, ENFILE, ENOBUFS), proton let the error end the reactor
thread; the guard stops accepting for ACCEPT_PAUSE_S instead (the clients wait in the
backlog) and says so on stderr once per pause. At install the soft limit on open files is
raised to the hard one (at most MAX_OPEN_FILES), so that the connection cap, not the
descriptor limit, is what a flood meets first.
"""

from __future__ import annotations

import contextlib
import errno
import resource
import select
import socket
import sys
from collections.abc import Sequence
from typing import Any

from proton import Event, Handler
from proton._io import IO
from proton._reactor import Acceptor
from proton.handlers import IOHandler

__all__ = ["ACCEPT_BATCH", "LISTEN_BACKLOG", "install"]

LISTEN_BACKLOG = 1024
ACCEPT_BATCH = 64
ACCEPT_PAUSE_S = 0.5
MAX_OPEN_FILES = 65536
_OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)

_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    original = IOHandler.on_selectable_expired

    def on_selectable_expired(self: Any, event: Event) -> None:
        selectable = event.selectable
        if selectable is None or getattr(selectable, "_transport", None) is None:
            return
        original(self, event)

    IOHandler.on_selectable_expired = on_selectable_expired  # type: ignore[method-assign]
    IO.select = staticmethod(poll_select)  # type: ignore[method-assign]
    IO.listen = staticmethod(listen)  # type: ignore[method-assign]
    accept_one = Acceptor.on_selectable_readable

    def accept_batch(self: Any, event: Event) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                accept_one(self, event)
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as exc:
                if exc.errno not in _OUT_OF_RESOURCES:
                    raise
                _pause_accepting(self, exc)
                return

    Acceptor.on_selectable_readable = accept_batch  # type: ignore[method-assign]
    _raise_open_files_limit()
    _installed = True


def _pause_accepting(acceptor: Any, exc: OSError) -> None:
    print(
        f"accept failed ({exc.strerror or exc}): not accepting for {ACCEPT_PAUSE_S} s",
        file=sys.stderr,
        flush=True,
    )
    selectable = acceptor._selectable
    selectable.reading = False
    acceptor._reactor.update(selectable)
    acceptor._reactor.schedule(ACCEPT_PAUSE_S, _Resume(selectable))


class _Resume(Handler):
    def __init__(self, selectable: Any) -> None:
        self._selectable = selectable

    def on_timer_task(self, event: Event) -> None:
        if not self._selectable.is_terminal:
            self._selectable.reading = True
            self._selectable._reactor.update(self._selectable)


def _raise_open_files_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = MAX_OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, MAX_OPEN_FILES)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def listen(host: str, port: int) -> socket.socket:
    """`IO.listen` with a backlog of LISTEN_BACKLOG (the kernel may cap it: somaxconn)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_TCP, socket.TCP_NODELAY, True)
    sock.setblocking(False)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, True)
    sock.bind((host, port))
    sock.listen(LISTEN_BACKLOG)
    return sock


_READ = select.POLLIN | select.POLLPRI
_WRITE = select.POLLOUT
_TROUBLE = select.POLLERR | select.POLLHUP | select.POLLNVAL


def poll_select(
    readers: Sequence[Any], writers: Sequence[Any], _errors: Sequence[Any], timeout: float = -1
) -> tuple[list[Any], list[Any], list[Any]]:
    """`select.select(readers, writers, errors, timeout)` done with `poll()`: the same
    answer for any descriptor number. Trouble on a socket (an error, a hang-up) makes it
    readable and writable, as select reports it; proton passes its writers as `errors`."""
    poller = select.poll()
    wanted: dict[int, int] = {}
    by_fd: dict[int, Any] = {}
    for objects, mask in ((readers, _READ), (writers, _WRITE)):
        for obj in objects:
            fd = obj.fileno()
            if fd < 0:
                continue
            wanted[fd] = wanted.get(fd, 0) | mask
            by_fd[fd] = obj
    for fd, mask in wanted.items():
        poller.register(fd, mask)
    ready = poller.poll(None if timeout is None or timeout < 0 else timeout * 1000)
    readable = [by_fd[fd] for fd, ev in ready if ev & (_READ | _TROUBLE) and wanted[fd] & _READ]
    writable = [by_fd[fd] for fd, ev in ready if ev & (_WRITE | _TROUBLE) and wanted[fd] & _WRITE]
    return readable, writable, []
