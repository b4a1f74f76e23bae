"""SIGTERM and SIGINT as a request the reactor sees: a flag, and a pipe that wakes its select.

The signal handler only sets `requested`; Python's wakeup fd writes a byte to
the pipe, the reactor's select returns, and the reactor acts on the flag at the
end of its batch, in its own thread.
"""

from __future__ import annotations

import contextlib
import os
import signal
from types import FrameType
from typing import Any

from proton import Event

__all__ = ["ShutdownSignal"]


class ShutdownSignal:
    """Owns the wakeup pipe; add it to the container with `container.selectable(handler=...)`."""

    def __init__(self) -> None:
        self.requested = False
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)
        self._installed = False
        # proton's IO handler looks for a transport on every selectable it serves.
        self._transport = None

    def install(self) -> None:
        """Route SIGTERM and SIGINT here; call from the main thread."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        self._installed = True

    def uninstall(self) -> None:
        if self._installed:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self._installed = False

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True

    def fileno(self) -> int:
        return self._read_fd

    def close(self) -> None:
        """Called by proton when the selectable ends; the pipe lives until `release`."""

    def release(self) -> None:
        self.uninstall()
        os.close(self._read_fd)
        os.close(self._write_fd)

    def on_selectable_init(self, event: Event) -> None:
        selectable: Any = event.context
        selectable.reading = True
        selectable.update()

    def on_selectable_readable(self, event: Event) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(self._read_fd, 512)
