"""Where a run is, as it goes: a live status line on a terminal, plain lines when piped."""

from __future__ import annotations

import sys
import time
from typing import Protocol, TextIO

__all__ = ["LineProgress", "NoProgress", "Progress", "TerminalProgress", "progress_for"]


class Progress(Protocol):
    def phase(self, name: str) -> None:
        """A new phase of the run began."""
        ...

    def note(self, text: str) -> None:
        """Something worth a line of its own (a fault applied or healed)."""
        ...

    def counts(self, elapsed_s: float, acknowledged: int, received: int) -> None:
        """Called often; shows the counters at a sensible rate."""
        ...

    def close(self) -> None: ...


class NoProgress:
    def phase(self, name: str) -> None:
        return None

    def note(self, text: str) -> None:
        return None

    def counts(self, elapsed_s: float, acknowledged: int, received: int) -> None:
        return None

    def close(self) -> None:
        return None


class LineProgress:
    """Plain lines: phases, faults, and the counters every few seconds."""

    def __init__(self, out: TextIO, every_s: float = 5.0) -> None:
        self.out = out
        self.every_s = every_s
        self._last = 0.0

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def phase(self, name: str) -> None:
        self._line(f"phase: {name}")

    def note(self, text: str) -> None:
        self._line(text)

    def counts(self, elapsed_s: float, acknowledged: int, received: int) -> None:
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            self._line(f"t={elapsed_s:.1f}s acknowledged={acknowledged} received={received}")

    def close(self) -> None:
        return None


class TerminalProgress:
    """One status line rewritten in place; phases and faults scroll above it."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._phase = "starting"
        self._faults = ""
        self._status = ""
        self._last = 0.0

    def _redraw(self) -> None:
        self.out.write("\r\x1b[2K" + self._status)
        self.out.flush()

    def _scroll(self, text: str) -> None:
        self.out.write("\r\x1b[2K" + text + "\n")
        self._redraw()

    def phase(self, name: str) -> None:
        self._phase = name
        self._scroll(f"· {name}")

    def note(self, text: str) -> None:
        self._scroll(f"  {text}")

    def counts(self, elapsed_s: float, acknowledged: int, received: int) -> None:
        now = time.monotonic()
        if now - self._last < 0.2:
            return
        self._last = now
        self._status = (
            f"[{self._phase}] t={elapsed_s:5.1f}s  acknowledged {acknowledged}  received {received}"
        )
        self._redraw()

    def close(self) -> None:
        self.out.write("\r\x1b[2K")
        self.out.flush()


def progress_for(out: TextIO = sys.stderr) -> Progress:
    return TerminalProgress(out) if out.isatty() else LineProgress(out)
