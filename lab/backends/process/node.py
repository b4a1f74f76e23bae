"""One node as a local process: start, kill -9, SIGSTOP/SIGCONT, stop; its log into events."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import IO

from lab.backends.node_log import take_log_line
from lab.ground.children import popen_options
from lab.ground.events import Events
from lab.ground.nodes import NodePlan
from lab.targets.protocol import Target

__all__ = ["NodeProcess"]


class NodeProcess:
    """A node's process. Restarting reuses the plan: same ports, same data."""

    def __init__(
        self, plan: NodePlan, command: list[str], target: Target, events: Events, detached: bool
    ) -> None:
        self.plan = plan
        self.command = command
        self.target = target
        self.events = events
        self.detached = detached
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused = False
        self.starts = 0
        self._ending = False  # the lab is ending the process (kill, stop)
        self._reader: threading.Thread | None = None
        self.log_path: Path = plan.node_dir / "broker.log"
        self.stderr_path: Path = plan.node_dir / "stderr.log"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        if self.running:
            return
        self._ending = False
        self.plan.data_dir.mkdir(parents=True, exist_ok=True)
        with self.stderr_path.open("ab") as err:
            if self.detached:
                with self.log_path.open("ab") as out:
                    self.proc = subprocess.Popen(
                        self.command,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=err,
                        **popen_options(True),
                    )
            else:
                self.proc = subprocess.Popen(
                    self.command,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    **popen_options(False),
                )
                assert self.proc.stdout is not None
                self._reader = threading.Thread(
                    target=self._read_log,
                    args=(self.proc.stdout,),
                    name=f"log-{self.plan.name}",
                    daemon=True,
                )
                self._reader.start()
        self.paused = False
        self.starts += 1
        self.events.emit("node.start", self.plan.name, pid=self.proc.pid)

    def _read_log(self, stream: IO[bytes]) -> None:
        with stream, self.log_path.open("a", buffering=1, encoding="utf-8") as log:
            self._follow(stream, log)  # to its end: the node closed its output
        proc = self.proc
        if proc is None or self._ending:
            return
        try:
            status = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return  # it closed its output but runs on
        if not self._ending:
            # It ended by itself (a broker that shuts down on a fatal error).
            self.events.emit("node.exit", self.plan.name, status=status)

    def _follow(self, stream: IO[bytes], log: IO[str]) -> None:
        for raw in stream:
            line = raw.decode("utf-8", "replace")
            take_log_line(line, log, self.target, self.events, self.plan.name)

    def exit_detail(self) -> str:
        status = self.proc.returncode if self.proc else "?"
        return f"exited with status {status}; see {self.stderr_path}"

    def _signal(self, sig: signal.Signals) -> bool:
        if not self.running or self.proc is None:
            return False
        try:
            os.kill(self.proc.pid, sig)
        except ProcessLookupError:
            return False
        return True

    def kill(self) -> None:
        """kill -9: no chance to flush or close anything."""
        self._ending = True
        if self._signal(signal.SIGKILL) and self.proc is not None:
            self.proc.wait()
            self.events.emit("node.kill", self.plan.name, signal="SIGKILL")  # when it died
            self._join_reader()
            self.paused = False

    def pause(self) -> None:
        """SIGSTOP: the process freezes, as in a long full-GC stall."""
        if self._signal(signal.SIGSTOP):
            self.paused = True
            self.events.emit("node.pause", self.plan.name)

    def resume(self) -> None:
        if self._signal(signal.SIGCONT):
            was_paused = self.paused
            self.paused = False
            if was_paused:
                self.events.emit("node.resume", self.plan.name)

    def stop(self, timeout_s: float = 5.0) -> None:
        """A clean stop (SIGTERM), SIGKILL when it does not end in time."""
        if self.ask_to_stop():
            self.wait_stopped(timeout_s)

    def ask_to_stop(self) -> bool:
        """SIGTERM (after SIGCONT, were it frozen); False when it is not running. A cluster
        asks every node first, then waits for each, so they stop side by side."""
        if not self.running or self.proc is None:
            return False
        self._ending = True
        self._signal(signal.SIGCONT)
        self._signal(signal.SIGTERM)
        return True

    def wait_stopped(self, timeout_s: float = 5.0) -> None:
        """Wait for the stop `ask_to_stop` began; SIGKILL when it does not end in time."""
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.proc.wait()
        self._join_reader()
        self.paused = False
        self.events.emit("node.stop", self.plan.name, status=self.proc.returncode)

    def _join_reader(self) -> None:
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None
