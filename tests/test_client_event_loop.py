"""The client workers' event loop survives Qpid Proton's race between a connection's
selectable being finalized and its deadline expiring (clients.event_loop)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from proton.handlers import IOHandler

import clients.event_loop  # noqa: F401  (installs the guard on Proton's IO handler)


def test_a_deadline_after_the_selectable_was_finalized_is_skipped() -> None:
    finalized: Any = SimpleNamespace(selectable=SimpleNamespace(_transport=None, _reactor=None))
    IOHandler().on_selectable_expired(finalized)  # Proton's own raised AttributeError here


def test_a_live_selectable_still_goes_to_protons_handler() -> None:
    live: Any = SimpleNamespace(
        selectable=SimpleNamespace(_transport=object(), _reactor=SimpleNamespace(now=1.0))
    )
    with pytest.raises(AttributeError, match="capacity"):  # Proton's update() reached it
        IOHandler().on_selectable_expired(live)
