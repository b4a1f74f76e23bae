"""Child processes of the lab: each dies with the lab process that started it, unless it
is meant to outlive it (a cluster started by `lab up`)."""

from __future__ import annotations

import ctypes
import signal
from pathlib import Path
from typing import Any

__all__ = ["die_with_parent", "popen_options", "process_alive", "process_started"]

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In the child: receive SIGKILL when the lab process that started it dies."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def popen_options(detached: bool) -> dict[str, Any]:
    """Detached processes (`lab up`) outlive the lab; all others die with it."""
    if detached:
        return {"start_new_session": True}
    return {"preexec_fn": die_with_parent}


def process_alive(pid: int) -> bool:
    """Whether process `pid` exists and has not ended (a zombie has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[-1].split()
    return bool(fields) and fields[0] != "Z"


def process_started(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, as /proc says), or None when it is
    gone: a pid and its start time name one process, even once the pid is used again."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None
