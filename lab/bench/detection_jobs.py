"""The detection benchmark's commands: each a `lab` command run by a scratch tree (its own
process, bound to die with the benchmark), `jobs` at once, with a progress line.

    pool = JobPool(jobs, logs_dir, progress)
    pool.submit(Job("ack-… random 1", tree, ("campaign", …), estimate_s, done))
    pool.run()            # until every job (and those their `done` submitted) has ended

`done(returncode, stdout, stderr)` runs as each job ends, and may submit more. Ctrl-C (or
any error) interrupts the jobs still going with SIGINT (each `lab` heals and stops what it
started), then kills what is left after a minute.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import select
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from lab.bench.scratch import Tree
from lab.ground.children import die_with_parent

__all__ = ["Job", "JobPool", "Progress"]

STOP_GRACE_S = 60.0


@dataclass
class Job:
    key: str  # what it is, for the progress line: "ack-quorum-off-by-one · random · trial 1"
    tree: Tree
    args: tuple[str, ...]
    estimate_s: float  # how long it may take at most (for the time left)
    done: Callable[[int, str, str], None]
    canary_log: Path | None = None  # where the bug's canaries write (lab.bench.scratch)
    began: dt.datetime | None = None  # UTC, when its command started
    started: float = 0.0  # monotonic
    seconds: float = 0.0  # from its start to its end, once ended
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    out: Path | None = None
    err: Path | None = None


def _wait_any(jobs: list[Job], timeout_s: float) -> None:
    """Return when one of `jobs` has ended, or after `timeout_s` (a pidfd per process)."""
    fds = []
    try:
        for job in jobs:
            if job.proc is not None:
                with contextlib.suppress(OSError):
                    fds.append(os.pidfd_open(job.proc.pid))
        if fds:
            select.select(fds, [], [], timeout_s)
        else:
            time.sleep(timeout_s)
    finally:
        for fd in fds:
            os.close(fd)


def _child() -> None:
    """In each job's process: it dies with the benchmark, and Ctrl-C interrupts it (also when
    the benchmark was started where SIGINT is ignored, as in a background shell)."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Progress:
    """On a terminal a status line stays at the bottom; piped, a line per finished job."""

    def __init__(self, out: TextIO = sys.stderr) -> None:
        self.out = out
        self.live = out.isatty()

    def finished(self, line: str, status: str) -> None:
        if self.live:
            self.out.write(f"\r\033[K{line}\n\r\033[K{status}")
        else:
            self.out.write(f"{line} · {status}\n")
        self.out.flush()

    def status(self, status: str) -> None:
        if self.live:
            self.out.write(f"\r\033[K{status}")
            self.out.flush()

    def close(self) -> None:
        if self.live:
            self.out.write("\n")
            self.out.flush()


class JobPool:
    def __init__(self, jobs: int, logs: Path, progress: Progress) -> None:
        self.jobs = jobs
        self.logs = logs
        self.progress = progress
        self.queue: deque[Job] = deque()
        self.running: list[Job] = []
        self.ended = 0
        self._numbers = 0

    def submit(self, job: Job) -> None:
        self.queue.append(job)

    def _start(self, job: Job) -> None:
        self._numbers += 1
        self.logs.mkdir(parents=True, exist_ok=True)
        job.out = self.logs / f"{self._numbers}.out"
        job.err = self.logs / f"{self._numbers}.err"
        argv, where = job.tree.lab(*job.args, canary_log=job.canary_log)
        job.began = dt.datetime.now(dt.UTC)
        job.started = time.monotonic()
        with job.out.open("wb") as out, job.err.open("wb") as err:
            job.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, preexec_fn=_child, **where
            )
        self.running.append(job)

    def left_s(self) -> float:
        """An upper bound of the time left: the estimates of what is queued, shared out over
        the jobs at once, and of what runs, less its time so far."""
        now = time.monotonic()
        running = max((j.estimate_s - (now - j.started) for j in self.running), default=0.0)
        return max(0.0, running) + sum(j.estimate_s for j in self.queue) / self.jobs

    def status(self) -> str:
        going = ", ".join(j.key for j in self.running) or "nothing"
        left = self.left_s()
        return (
            f"detection: {self.ended} done, {len(self.queue)} queued · running {going} · "
            f"≤ {left / 60:.0f} min left"
        )

    def run(self) -> None:
        try:
            while self.queue or self.running:
                while self.queue and len(self.running) < self.jobs:
                    self._start(self.queue.popleft())
                for job in list(self.running):
                    assert job.proc is not None and job.out is not None and job.err is not None
                    code = job.proc.poll()
                    if code is None:
                        continue
                    self.running.remove(job)
                    self.ended += 1
                    job.seconds = time.monotonic() - job.started
                    out = job.out.read_text(encoding="utf-8", errors="replace")
                    err = job.err.read_text(encoding="utf-8", errors="replace")
                    minutes = job.seconds / 60
                    job.done(code, out, err)
                    self.progress.finished(
                        f"{job.key}: ended ({code}) in {minutes:.1f} min", self.status()
                    )
                self.progress.status(self.status())
                if not self.queue or len(self.running) >= self.jobs:
                    _wait_any(self.running, 0.5)  # at once when a job ends: no idle slot
        except BaseException:
            self.stop()
            raise
        finally:
            self.progress.close()

    def stop(self) -> None:
        """Ctrl-C for every job still going, then SIGKILL for what is left after a minute."""
        for job in self.running:
            if job.proc is not None and job.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    job.proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + STOP_GRACE_S
        for job in self.running:
            if job.proc is None:
                continue
            with contextlib.suppress(subprocess.TimeoutExpired):
                job.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            if job.proc.poll() is None:
                job.proc.kill()
                job.proc.wait()
        self.queue.clear()
