"""One run of a scenario, end to end, into one run folder (architecture.md, data flow).

    spec.json → schedule.jsonl (planned) → cluster up → workers → faults on schedule
    → heal all → producers stop → consumers drain → check → result.json

Heals, workers and the cluster are torn down in `finally`, also on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

from faults.base import preflight
from faults.nemesis import Nemesis
from lab.backends.catalog import Cluster, make_cluster, make_target
from lab.ground.errors import LabError
from lab.ground.faultops import FaultOp
from lab.ground.paths import LAB_ROOT
from lab.ground.spec import RunSpec, git_revision
from lab.judge.checker import CheckResult, check_path
from lab.judge.facts import TargetTraits
from lab.judge.metrics import RunMetrics, read_events, read_operations, run_metrics
from lab.run.folder import EventLog, HistoryRecorder, JsonlWriter, RunClock, RunFolder, write_json
from lab.run.progress import NoProgress, Progress
from lab.run.workers import WorkerProcess, worker_plans
from scenarios.base import Scenario, Verdict

__all__ = ["RunOutcome", "reproduce_command", "run_scenario"]

RESULT_VERSION = 1


@dataclass(frozen=True)
class RunOutcome:
    folder: RunFolder
    spec: RunSpec
    verdict: Verdict
    check: CheckResult
    metrics: RunMetrics

    @property
    def summary(self) -> str:
        c = self.check
        line = (
            f"{self.spec.scenario} seed={self.spec.seed}: prediction {self.verdict.outcome} — "
            f"acknowledged {c.acknowledged}, received {c.received}, lost {c.lost.count}, "
            f"duplicated {c.duplicated.count}, unexpected {c.unexpected.count}, "
            f"resurrected {c.resurrected.count}"
        )
        if self.verdict.reasons:
            line += " (" + "; ".join(self.verdict.reasons) + ")"
        return line


def reproduce_command(folder: RunFolder) -> str:
    return f".venv/bin/lab replay {shlex.quote(str(folder.path))}"


@contextlib.contextmanager
def _interrupts_as_exceptions() -> Iterator[None]:
    """SIGTERM ends a run like Ctrl-C does, so every `finally` (heals, teardown) runs."""

    def raise_interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    try:
        previous = signal.signal(signal.SIGTERM, raise_interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Run:
    def __init__(self, spec: RunSpec, scenario: Scenario, folder: RunFolder, progress: Progress):
        self.spec = spec
        self.scenario = scenario
        self.folder = folder
        self.progress = progress
        self.clock = RunClock()
        self.events = EventLog(folder.events, self.clock)
        # Ties the run's clock (ns since its start) to the wall clock, for reports.
        self.events.emit("run.start", None, wall_ns=time.time_ns() - self.clock.now())
        self.schedule_log = JsonlWriter(folder.schedule)
        self.history = HistoryRecorder(folder.history)
        self.workers: list[WorkerProcess] = []
        self.cluster: Cluster | None = None

    def tick(self) -> None:
        self.progress.counts(
            self.clock.now() / 1e9, self.history.acknowledged, self.history.received
        )

    def wait(self, seconds: float, until: Callable[[], bool] = lambda: False) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if until():
                return True
            self.tick()
            time.sleep(0.05)
        return until()

    def _log_applied(self, entry: dict[str, Any]) -> None:
        """schedule.jsonl times are on the run's clock, as history and events are."""
        self.schedule_log.write({**entry, "time": int(entry["time"]) - self.clock.start_ns})

    def phase(self, name: str) -> None:
        self.events.emit("workload.phase", None, phase=name)
        self.progress.phase(name)

    def on_fault(self, what: str, op: FaultOp) -> None:
        self.progress.note(f"fault {op.id} {what}: {op.fault} {op.target}")

    def execute(self) -> None:
        spec = self.spec
        write_json(self.folder.spec, spec.to_json())
        for op in spec.schedule:
            self.schedule_log.write({"phase": "planned", **op.to_json()})
        self.cluster = make_cluster(
            spec.backend,
            spec.target,
            spec.topology,
            spec.durability,
            self.folder.path,
            events=self.events,
            group=spec.group,
        )
        try:
            self._body(self.cluster)
        finally:
            self._teardown()

    def _body(self, cluster: Cluster) -> None:
        spec = self.spec
        preflight(cluster, spec.schedule)
        self.phase("cluster")
        master = cluster.start()
        self.progress.note(f"cluster ready, master {master}")
        plans = worker_plans(
            spec.workload, cluster.client_urls(), cluster.node_names, self.clock.start_ns
        )
        log_dir = self.folder.path / "workers"
        log_dir.mkdir(exist_ok=True)
        for plan in plans:
            worker = WorkerProcess(plan, self.history, log_dir, self.events)
            self.workers.append(worker)
        producers = [w for w in self.workers if w.plan.role == "producer"]
        consumers = [w for w in self.workers if w.plan.role == "consumer"]
        # Consumers that do not consume during the load start only to drain, at the end.
        early = self.workers if spec.workload.consume_during_load else producers
        for worker in early:
            worker.start()
        self.phase("load")
        load_started = time.monotonic_ns()
        with Nemesis(
            cluster,
            events=self.events,
            log=self._log_applied,
            clock_ns=time.monotonic_ns,
            on_change=self.on_fault,
        ) as nemesis:
            nemesis.run(spec.schedule, started_at_ns=load_started, tick=self.tick)
            remaining = spec.workload.duration_s - (time.monotonic_ns() - load_started) / 1e9
            self.wait(max(0.0, remaining))
            self.phase("heal")
        # Leaving the block healed every fault; the cluster must be whole before draining.
        try:
            cluster.wait_ready()
        except LabError as exc:
            self.events.emit("cluster.unready", None, error=str(exc))
            self.progress.note(f"cluster not ready after healing: {exc}")
        self.phase("stop")
        for worker in producers:
            worker.command("stop")
        self.wait(15.0, until=lambda: not any(w.running for w in producers))
        self.phase("drain")
        for worker in consumers:
            worker.start()  # does nothing for a consumer started with the load
            worker.command("drain")
        self.wait(
            spec.workload.drain_timeout_s + 10.0,
            until=lambda: not any(w.running for w in consumers),
        )
        self._snapshot_nodes(cluster)

    def _snapshot_nodes(self, cluster: Cluster) -> None:
        """Store listings and the nodes' own view, taken at the end."""
        for name, status in cluster.statuses().items():
            node = cluster.node(name)
            data_dir = node.plan.data_dir
            files = (
                [
                    {"file": str(p.relative_to(data_dir)), "bytes": p.stat().st_size}
                    for p in sorted(data_dir.rglob("*"))
                    if p.is_file()
                ]
                if data_dir.is_dir()
                else []
            )
            listing: dict[str, Any] = {
                "node": name,
                "files": files,
                "status": None
                if status is None
                else {
                    "role": status.role,
                    "last_transaction_id": status.last_transaction_id,
                    "queue_depths": dict(status.queue_depths),
                },
            }
            write_json(node.plan.node_dir / "store.json", listing)
            self.events.emit("node.status", name, role=None if status is None else status.role)

    def _teardown(self) -> None:
        self.events.emit("workload.phase", None, phase="teardown")
        errors: list[str] = []
        for worker in self.workers:
            try:
                worker.terminate()
            except Exception as exc:
                errors.append(f"worker {worker.plan.process}: {exc}")
        if self.cluster is not None:
            try:
                self.cluster.stop()
            except Exception as exc:
                errors.append(f"cluster: {exc}")
        self.events.emit("workload.phase", None, phase="end")
        self.history.close()
        self.schedule_log.close()
        self.events.close()
        self.progress.close()
        if errors:
            raise LabError("teardown: " + "; ".join(errors))


def run_scenario(
    spec: RunSpec,
    scenario: Scenario,
    runs_dir: Path,
    *,
    progress: Progress | None = None,
) -> RunOutcome:
    """Run `spec` into a new run folder under `runs_dir`, judge it, write result.json."""
    shown = progress or NoProgress()
    spec = replace(spec, git_revision=git_revision(LAB_ROOT))
    folder = RunFolder.create(runs_dir, spec.scenario, spec.seed)
    run = _Run(spec, scenario, folder, shown)
    with _interrupts_as_exceptions():
        try:
            run.execute()
        except BaseException as exc:
            write_json(
                folder.result,
                {
                    "v": RESULT_VERSION,
                    "scenario": spec.scenario,
                    "seed": spec.seed,
                    "verdict": "unknown",
                    "error": f"{type(exc).__name__}: {exc}",
                    "reproduce": reproduce_command(folder),
                },
            )
            raise
    check = check_path(folder.history)
    events = read_events(folder.events)
    metrics = run_metrics(read_operations(folder.history), events)
    prediction = scenario.prediction_for(spec)
    verdict = prediction.judge(check, events, metrics, TargetTraits.of(make_target(spec.target)))
    outcome = RunOutcome(folder, spec, verdict, check, metrics)
    write_json(
        folder.result,
        {
            "v": RESULT_VERSION,
            "scenario": spec.scenario,
            "seed": spec.seed,
            "target": spec.target,
            "backend": spec.backend,
            "verdict": verdict.outcome,
            "reasons": list(verdict.reasons),
            "prediction": prediction.text,
            "check": check.to_json(),
            "metrics": metrics.to_json(),
            "reproduce": reproduce_command(folder),
        },
    )
    return outcome
