"""`lab run` processes forked from a warm interpreter, for campaigns.

A fresh `python -m lab run …` spends about half a second on the interpreter's start and
the lab's imports (the judge's columnar libraries, the targets, the scenarios) before its
cluster starts: a third of a short run's fixed cost, paid again by every run of a
campaign. A campaign's runs are instead forked from a fork server that imported the lab
once (the standard library's `forkserver` start method, single-threaded, started on first
use), so each run begins with everything imported. The run itself is the same `lab run`
command line: the same `main`, its output to the same files, the same exit status, the
same answers to SIGINT and SIGTERM.

    warm_up()                            the fork server started ahead of the first run
    proc = start_lab(["run", "random", "--seed", "3", …], out_path, err_path)
    proc.poll() → None | exit status     proc.wait()     proc.send_signal(SIGINT)
    wait_any([proc, …], timeout_s)       returns as soon as one of them ends
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import os
import runpy
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["PRELOAD", "LabProcess", "start_lab", "wait_any", "warm_up"]

# What every `lab run` imports before its cluster starts.
PRELOAD = (
    "lab.cli.main",
    "lab.cli.runs",
    "lab.run.runner",
    "lab.judge.result",
    "lab.backends.catalog",
    "lab.targets.catalog",
    "scenarios.catalog",
    "faults.nemesis",
)

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(list(PRELOAD))


def _lab_main(argv: list[str], out_path: str, err_path: str, cwd: str) -> None:
    """In the forked child: `lab ARGV` with stdout and stderr in the given files, in the
    folder the campaign was started from (its relative paths mean the same in every run)."""
    for fd, path in ((1, out_path), (2, err_path)):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(cwd)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C heals, as `lab run`
    sys.argv = ["lab", *argv]
    runpy.run_module("lab", run_name="__main__", alter_sys=True)  # as `python -m lab` does


class LabProcess:
    """One forked `lab` command, with Popen's ways of watching and stopping it."""

    def __init__(self, process: multiprocessing.process.BaseProcess) -> None:
        self._process = process

    @property
    def pid(self) -> int:
        pid = self._process.pid
        assert pid is not None
        return pid

    @property
    def sentinel(self) -> int:
        return self._process.sentinel

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self) -> int:
        self._process.join()
        code = self._process.exitcode
        assert code is not None
        return code

    def send_signal(self, sig: int) -> None:
        if self._process.exitcode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def warm_up() -> None:
    """Start the fork server and its imports now (once per campaign), not in a run's time."""
    multiprocessing.forkserver.ensure_running()


def start_lab(argv: Sequence[str], out_path: Path, err_path: Path) -> LabProcess:
    """Start `lab ARGV` from the warm interpreter (the fork server starts on first use)."""
    process = _context.Process(
        target=_lab_main,
        args=(list(argv), str(out_path), str(err_path), os.getcwd()),
        name=f"lab {' '.join(argv[:2])}",
    )
    process.start()
    return LabProcess(process)


def wait_any(processes: Sequence[LabProcess], timeout_s: float) -> None:
    """Return when one of `processes` has ended, or after `timeout_s`."""
    if processes:
        multiprocessing.connection.wait([p.sentinel for p in processes], timeout_s)
