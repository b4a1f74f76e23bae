"""Guards around python-qpid-proton's IO (0.39–0.40), installed once, before the reactor runs.

A race: when a client connection is aborted, proton may terminate the connection's
selectable (dropping its transport) while a timer for that selectable is already due;
`IOHandler.on_selectable_expired` then calls `update` with no transport and the reactor
thread dies with an AttributeError. A timer on a selectable that has no transport any
more has nothing left to do, so the guard skips it.

A limit: proton waits on its sockets with `select()`, which cannot watch a descriptor
above 1023 — the 1021st idle client killed the node ("filedescriptor out of range in
select()"). The guard waits with `poll()` instead, which has no such limit.
"""

from __future__ import annotations

import select
from collections.abc import Sequence
from typing import Any

from proton import Event
from proton._io import IO
from proton.handlers import IOHandler

__all__ = ["install"]

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
    _installed = True


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
