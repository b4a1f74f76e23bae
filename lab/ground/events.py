"""Where observations go: the run's event log, or nowhere."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Events", "NoEvents"]


class Events(Protocol):
    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        """Record one observation (docs/run-folder.md, events.jsonl)."""
        ...


class NoEvents:
    """Events that go nowhere (a cluster started by `lab up`)."""

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        return None
