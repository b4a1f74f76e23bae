"""A guard around one race in python-qpid-proton's IO handler (0.39–0.40).

When a client connection is aborted, proton may terminate the connection's
selectable (dropping its transport) while a timer for that selectable is
already due; `IOHandler.on_selectable_expired` then calls `update` with no
transport and the reactor thread dies with an AttributeError. A timer on a
selectable that has no transport any more has nothing left to do, so the guard
skips it. Installed once, before the reactor runs.
"""

from __future__ import annotations

from typing import Any

from proton import Event
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
    _installed = True
