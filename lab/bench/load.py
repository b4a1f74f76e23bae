"""A steady workload against a running cluster, measured in acknowledged sends per second."""

from __future__ import annotations

import time
from pathlib import Path

from lab.ground.events import NoEvents
from lab.ground.spec import Workload
from lab.run.folder import HistoryRecorder
from lab.run.workers import WorkerProcess, worker_plans

__all__ = ["acknowledged_per_second"]


def acknowledged_per_second(
    workload: Workload,
    urls: list[str],
    nodes: tuple[str, ...],
    work_dir: Path,
    *,
    warmup_s: float,
    measure_s: float,
) -> float:
    """Start the workload's workers, let them warm up, count acknowledged sends for
    `measure_s` seconds; the workers are always stopped."""
    recorder = HistoryRecorder(work_dir / f"history-{workload.queue}.jsonl")
    workers = [
        WorkerProcess(plan, recorder, work_dir, NoEvents())
        for plan in worker_plans(workload, urls, nodes, time.monotonic_ns())
    ]
    try:
        for worker in workers:
            worker.start()
        time.sleep(warmup_s)
        first = recorder.acknowledged
        time.sleep(measure_s)
        return (recorder.acknowledged - first) / measure_s
    finally:
        for worker in workers:
            worker.terminate()
        recorder.close()
