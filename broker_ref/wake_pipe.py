"""A pipe the reactor's select watches, so another thread (or a signal) can wake it.

Add an instance to the container with `container.selectable(handler=...)`;
`wake` writes a byte, the reactor's select returns and `on_wake` runs in the
reactor thread.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from proton import Event

__all__ = ["WakePipe"]


class WakePipe:
    def __init__(self) -> None:
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)
        # proton's IO handler looks for a transport on every selectable it serves.
        self._transport = None

    @property
    def write_fd(self) -> int:
        return self._write_fd

    def wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._write_fd, b"x")

    def on_wake(self) -> None:
        """What to do in the reactor thread once woken."""

    def fileno(self) -> int:
        return self._read_fd

    def close(self) -> None:
        """Called by proton when the selectable ends; the pipe lives until `release`."""

    def release(self) -> None:
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
        self.on_wake()
