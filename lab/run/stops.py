"""How a run was stopped before its end, as result.json's `interrupted` tells it: by a
signal (Ctrl-C, SIGTERM), or by its own disk — the first write into the run folder that
failed stops the load, every fault is healed and every process stopped (the runner's
`finally`), and the lab says in one line which folder filled, what the run had written and
what it needed.

    interruption_by_a_signal(e, …)  the `Interruption` of a run Ctrl-C or SIGTERM stopped
    WriteStopped                    raised by the runner's tick once its `WriteWatch` saw a
                                    failed write
    stopped_by_a_write(e)           the WriteStopped in an exception's chain, or None
    interruption_of(...)            the `Interruption` result.json records (signal: ENOSPC, …)
    one_line(...)                   the DiskFullError the `lab` command prints
"""

from __future__ import annotations

import errno
import signal
from pathlib import Path

from lab.ground.errors import DiskFullError
from lab.judge.result import Interruption
from lab.run.disk import WriteFailure, folder_bytes, mount_point, size_text

__all__ = [
    "WriteStopped",
    "interruption_by_a_signal",
    "interruption_of",
    "one_line",
    "stopped_by_a_write",
]


def interruption_by_a_signal(
    exc: BaseException, phase: str, healed: tuple[str, ...]
) -> Interruption | None:
    """How the run was stopped, when Ctrl-C or SIGTERM stopped it (also when a heal or the
    teardown failed on the way out, and that error is what was raised); None otherwise."""
    seen: BaseException | None = exc
    errors: list[str] = []
    while seen is not None and not isinstance(seen, KeyboardInterrupt):
        errors.append(str(seen))
        seen = seen.__context__
    if seen is None:
        return None
    signal_name = "SIGTERM" if str(seen) == f"signal {int(signal.SIGTERM)}" else "SIGINT"
    return Interruption(signal_name, phase, healed, tuple(errors))


class WriteStopped(DiskFullError):
    """A write into the run folder failed: the run stops."""

    def __init__(self, failure: WriteFailure) -> None:
        super().__init__(f"{failure.path}: {failure.reason}")
        self.failure = failure


def stopped_by_a_write(exc: BaseException) -> WriteStopped | None:
    """The WriteStopped that ended a run (also when a heal or the teardown failed after it,
    and that error is what was raised)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, WriteStopped):
            return seen
        seen = seen.__context__
    return None


def _errors_after(exc: BaseException, stopped: WriteStopped) -> tuple[str, ...]:
    """What failed on the way out after the write stopped the run (heals, the teardown)."""
    errors: list[str] = []
    seen: BaseException | None = exc
    while seen is not None and seen is not stopped:
        errors.append(str(seen))
        seen = seen.__context__
    return tuple(errors)


def interruption_of(
    stopped: WriteStopped, exc: BaseException, phase: str, healed: tuple[str, ...]
) -> Interruption:
    """result.json's account: the errno's name in place of a signal (ENOSPC for a full disk)."""
    name = errno.errorcode.get(stopped.failure.code, "EIO")
    return Interruption(name, phase, healed, _errors_after(exc, stopped))


def one_line(
    stopped: WriteStopped,
    how: Interruption,
    runs_dir: Path,
    folder: Path,
    needed: int,
    free_at_start: int | None,
    result_written: bool,
) -> DiskFullError:
    """The one line the `lab` command prints for a run its disk stopped."""
    failure = stopped.failure
    where = runs_dir
    try:
        file_system = mount_point(folder)
    except OSError:
        file_system = None
    on = f" (file system {file_system})" if file_system is not None else ""
    what = "is full" if failure.full else f"refused a write ({failure.reason})"
    inside = failure.path.is_relative_to(folder)
    shown = failure.path.relative_to(folder) if inside else failure.path
    start = "" if free_at_start is None else f", {size_text(free_at_start)} free at its start"
    faults = "every fault healed" if not how.heal_errors else f"{len(how.heal_errors)} error(s)"
    result = "result.json says interrupted" if result_written else "no result.json"
    return DiskFullError(
        f"{where}{on} {what}: the run {folder.name} stopped in phase {how.phase} writing "
        f"{shown} after {size_text(folder_bytes(folder))}; it needs about {size_text(needed)}"
        f"{start}. {faults.capitalize()}, every process stopped, its files end at whole "
        f"lines, {result}"
    )
