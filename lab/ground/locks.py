"""Machine-wide locks: one lab process at a time does a given piece of set-up."""

from __future__ import annotations

import contextlib
import fcntl
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["host_lock"]


@contextlib.contextmanager
def host_lock(name: str) -> Iterator[None]:
    """One lab process at a time on this machine (test workers set up together)."""
    with (Path(tempfile.gettempdir()) / f"lab-{name}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
