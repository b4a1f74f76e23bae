"""Hands work from other threads to the reactor thread, waking its select through a pipe.

The group's networking runs in its own thread; everything that touches the
store, the queues or AMQP links runs in the reactor thread. `post` is the one
way across: the callable runs in the reactor thread, in posting order.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from proton import Event

__all__ = ["Mailbox"]


class Mailbox:
    """Add it to the container with `container.selectable(handler=mailbox)`."""

    def __init__(self) -> None:
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)
        self._items: deque[Callable[[], None]] = deque()
        self._lock = threading.Lock()
        self._closed = False
        # proton's IO handler looks for a transport on every selectable it serves.
        self._transport = None

    def post(self, action: Callable[[], None]) -> None:
        """Run `action` in the reactor thread soon; safe from any thread."""
        with self._lock:
            if self._closed:
                return
            self._items.append(action)
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._write_fd, b"x")

    def run_pending(self) -> None:
        """Run everything posted so far (in the reactor thread)."""
        while True:
            with self._lock:
                if not self._items:
                    return
                action = self._items.popleft()
            action()

    def fileno(self) -> int:
        return self._read_fd

    def close(self) -> None:
        """Called by proton when the selectable ends; the pipe lives until `release`."""

    def release(self) -> None:
        with self._lock:
            self._closed = True
            self._items.clear()
        os.close(self._read_fd)
        os.close(self._write_fd)

    def on_selectable_init(self, event: Event) -> None:
        selectable: Any = event.context
        selectable.reading = True
        selectable.update()

    def on_selectable_readable(self, event: Event) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._read_fd, 4096):
                pass
        self.run_pending()
