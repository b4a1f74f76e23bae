"""Client workers as child processes; their operations flow into the one history writer.

Each worker prints operations as JSON lines on stdout; a reader thread here hands
them to the HistoryRecorder, which numbers them (and a worker's note that it could not write
its log to the run's WriteWatch). Commands go to the worker's
stdin (`stop`, `drain`); closing stdin tells it to exit.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from lab.ground.children import popen_options
from lab.ground.events import Events
from lab.ground.spec import Workload
from lab.run.disk import WriteWatch
from lab.run.folder import HistoryRecorder

__all__ = ["WorkerPlan", "WorkerProcess", "worker_plans"]


@dataclass(frozen=True)
class WorkerPlan:
    process: str  # "p1", "c1", …
    role: str  # "producer" or "consumer"
    argv: tuple[str, ...]


# A worker's note that it could not write its log (clients.op_writer: the key of the note).
_LOG_FAILED = "log_failed"

# The address's name for a cluster's virtual address; once connected, a client records
# the broker that answered instead (`--node-from-broker`).
VIRTUAL_NODE = "vip"


def _failover_list(urls: list[str], nodes: tuple[str, ...], first: int) -> tuple[str, ...]:
    """The URL list and its nodes, rotated to begin at index `first`."""
    k = first % len(urls) if urls else 0
    return ("--urls", ",".join(urls[k:] + urls[:k]), "--nodes", ",".join(nodes[k:] + nodes[:k]))


def _worker(module: str, process: str, role: str, *args: str) -> WorkerPlan:
    return WorkerPlan(process, role, (sys.executable, "-m", module, "--process", process, *args))


def worker_plans(
    workload: Workload,
    urls: list[str],
    nodes: tuple[str, ...],
    run_start_ns: int,
    queue_prefix: str = "",
    consumer_options: tuple[str, ...] = (),
) -> tuple[WorkerPlan, ...]:
    """Consumers, then producers. With `spread_producers`, producer p<i> tries node i first.
    A side queue gets one producer and one consumer more, the last of each. A queue's
    address is its name after the target's `queue_prefix`; consumers get the target's
    `consumer_options` too."""

    def connection(queue: str, first: int = 0) -> tuple[str, ...]:
        return (
            *_failover_list(urls, nodes, first),
            "--queue",
            queue_prefix + queue,
            "--run-start-ns",
            str(run_start_ns),
            "--heartbeat",
            str(workload.heartbeat_s),
            # Behind the virtual address, the history names the broker that answered.
            *(("--node-from-broker",) if workload.virtual_address else ()),
        )

    sending: tuple[str, ...] = ("--rate", str(workload.rate), "--size", str(workload.size))
    sending += ("--window", str(workload.window))
    draining = ("--drain-timeout", str(workload.drain_timeout_s), *consumer_options)
    producers = [
        _worker(
            "clients.producer",
            f"p{i}",
            "producer",
            *connection(workload.queue, i - 1 if workload.spread_producers else 0),
            *sending,
        )
        for i in range(1, workload.producers + 1)
    ]
    consumers = [
        _worker("clients.consumer", f"c{i}", "consumer", *connection(workload.queue), *draining)
        for i in range(1, workload.consumers + 1)
    ]
    side = workload.side
    if side is not None:
        extra: tuple[str, ...] = ()
        if side.replicate is not None:
            extra += ("--replicate", side.replicate)
        extra += () if side.durable else ("--non-durable",)
        number = workload.producers + 1
        producers.append(
            _worker(
                "clients.producer",
                f"p{number}",
                "producer",
                *connection(side.queue),
                *sending,
                *extra,
            )
        )
        consumers.append(
            _worker(
                "clients.consumer",
                f"c{workload.consumers + 1}",
                "consumer",
                *connection(side.queue),
                *draining,
            )
        )
    return (*consumers, *producers)


class WorkerProcess:
    def __init__(
        self,
        plan: WorkerPlan,
        recorder: HistoryRecorder,
        log_dir: Path,
        events: Events,
        watch: WriteWatch | None = None,
    ) -> None:
        self.plan = plan
        self.recorder = recorder
        self.watch = watch
        self.log_path = log_dir / f"{plan.process}.log"
        self.events = events
        self.proc: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self.garbage = 0

    def start(self) -> None:
        """Start the worker process; a worker already started is left as it is."""
        if self.proc is not None:
            return
        with self.log_path.open("ab") as err:
            self.proc = subprocess.Popen(
                list(self.plan.argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                **popen_options(False),
            )
        assert self.proc.stdout is not None
        self._reader = threading.Thread(
            target=self._pump,
            args=(self.proc.stdout,),
            name=f"worker-{self.plan.process}",
            daemon=True,
        )
        self._reader.start()
        self.events.emit(
            "worker.start",
            None,
            process=self.plan.process,
            role=self.plan.role,
            pid=self.proc.pid if self.proc is not None else None,
        )

    def _pump(self, stream: IO[bytes]) -> None:
        with stream:  # to its end: the worker closed its output
            self._pump_ops(stream)

    def _pump_ops(self, stream: IO[bytes]) -> None:
        for raw in stream:
            try:
                op = json.loads(raw)
            except ValueError:
                self.garbage += 1
                continue
            if not isinstance(op, dict):
                continue
            if _LOG_FAILED in op:  # the worker could not write its log: the run folder's disk
                if self.watch is not None:
                    code = op.get("errno")
                    error = OSError(code if isinstance(code, int) else 0, str(op.get("error")))
                    self.watch.failed(self.log_path, error)
                continue
            self.recorder.record(op)

    def command(self, text: str) -> None:
        if self.proc is None or self.proc.stdin is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(OSError):
            self.proc.stdin.write(text.encode() + b"\n")
            self.proc.stdin.flush()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout_s: float) -> bool:
        """Wait for the worker to exit by itself; True if it did."""
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        self._join()
        return True

    def terminate(self) -> None:
        """Close its stdin (it exits at EOF), then insist."""
        if self.proc is None:
            return
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._join()
        self.events.emit(
            "worker.stop", None, process=self.plan.process, status=self.proc.returncode
        )

    def _join(self) -> None:
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None
