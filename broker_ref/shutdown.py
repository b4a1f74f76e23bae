"""SIGTERM and SIGINT as a request the reactor sees: a flag, and a pipe that wakes its select.

The signal handler only sets `requested`; Python's wakeup fd writes a byte to
the pipe, the reactor's select returns, and the reactor acts on the flag at the
end of its batch, in its own thread.
"""

from __future__ import annotations

import signal
from types import FrameType

from broker_ref.wake_pipe import WakePipe

__all__ = ["ShutdownSignal"]


class ShutdownSignal(WakePipe):
    """Add it to the container with `container.selectable(handler=...)`."""

    def __init__(self) -> None:
        super().__init__()
        self.requested = False
        self._installed = False

    def install(self) -> None:
        """Route SIGTERM and SIGINT here; call from the main thread."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)
        self._installed = True

    def uninstall(self) -> None:
        if self._installed:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self._installed = False

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True

    def release(self) -> None:
        self.uninstall()
        super().release()
