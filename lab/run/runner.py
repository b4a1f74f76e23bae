"""One run of a scenario, end to end, into one run folder (architecture.md, data flow).

    spec.json → schedule.jsonl (planned) → cluster up → workers → every producer sending
    → faults on schedule → heal all → producers stop → consumers drain → judge → result.json

The schedule's times and the load's duration count from the moment every producer has
recorded its first operation, so a slow start (a busy machine) does not move the faults
before the load.

Heals, workers and the cluster are torn down in `finally`, also on Ctrl-C and SIGTERM.
What the run is made of (the scenario, the target's traits, how to make the cluster)
comes from its caller as `RunParts` (lab.run.cluster).
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

from faults.nemesis import Nemesis
from faults.preflight import preflight
from lab.ground.errors import LabError
from lab.ground.events import NoEvents
from lab.ground.faultops import FaultOp
from lab.ground.files import write_json
from lab.ground.nodes import TargetTraits
from lab.ground.paths import LAB_ROOT
from lab.ground.spec import RunSpec
from lab.ground.spec_words import git_revision
from lab.judge.columnar import write_columnar_copies
from lab.judge.deviations import load_declarations
from lab.judge.result import Judgement, ReplayOf, RunResult, judge_run
from lab.run.active import register, unregister
from lab.run.cluster import Cluster, RunParts
from lab.run.disk import WriteWatch, check_space, space_needed
from lab.run.folder import EventLog, HistoryRecorder, JsonlWriter, RunClock, RunFolder
from lab.run.incident import validate_spec
from lab.run.outcome import RunOutcome
from lab.run.progress import NoProgress, Progress
from lab.run.reproduce import reproduce_command
from lab.run.stops import (
    WriteStopped,
    interruption_by_a_signal,
    interruption_of,
    one_line,
    stopped_by_a_write,
)
from lab.run.workers import VIRTUAL_NODE, WorkerProcess, worker_plans

__all__ = ["SENDERS_DEADLINE_S", "RunOutcome", "run_scenario"]

SENDERS_DEADLINE_S = 120.0  # the longest a run waits for its producers' first operations


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
    def __init__(self, spec: RunSpec, parts: RunParts, folder: RunFolder, progress: Progress):
        self.spec = spec
        self.parts = parts
        self.folder = folder
        self.progress = progress
        self.clock = RunClock()
        self.watch = WriteWatch()  # the first write into the run folder that fails
        self.events = EventLog(folder.events, self.clock, self.watch)
        # Ties the run's clock (ns since its start) to the wall clock, for reports.
        self.events.emit("run.start", None, wall_ns=time.time_ns() - self.clock.now())
        self.schedule_log = JsonlWriter(folder.schedule, self.watch)
        self.history = HistoryRecorder(folder.history, self.watch)
        self.workers: list[WorkerProcess] = []
        self.cluster: Cluster | None = None
        self.current_phase = "setup"
        self.nemesis: Nemesis | None = None

    def tick(self) -> None:
        self.progress.counts(
            self.clock.now() / 1e9, self.history.acknowledged, self.history.received
        )
        self.stop_if_a_write_failed()

    def stop_if_a_write_failed(self) -> None:
        """The first write into the run folder that failed stops the run (heals and teardown
        follow in `finally`): WriteStopped."""
        failure = self.watch.first
        if failure is not None:
            raise WriteStopped(failure)

    def write_json(self, path: Path, obj: Any) -> None:
        """A JSON file of the run folder, whole or absent; a failure goes to the watch."""
        try:
            write_json(path, obj)
        except OSError as error:
            self.watch.failed(path, error)

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
        self.current_phase = name
        self.events.emit("workload.phase", None, phase=name)
        self.progress.phase(name)

    def on_fault(self, what: str, op: FaultOp) -> None:
        self.progress.note(f"fault {op.id} {what}: {op.fault} {op.target}")

    def execute(self) -> None:
        spec = self.spec
        self.write_json(self.folder.spec, spec.to_json())
        self.stop_if_a_write_failed()
        for op in spec.schedule:
            self.schedule_log.write({"phase": "planned", **op.to_json()})
        self.cluster = self.parts.cluster(spec, self.folder.path, self.events)
        try:
            self._body(self.cluster)
        finally:
            self._teardown()

    def _body(self, cluster: Cluster) -> None:
        spec = self.spec
        self.phase("cluster")
        master = cluster.start()
        self.progress.note(f"cluster ready, master {master}")
        urls, nodes = cluster.client_urls(), cluster.node_names
        if spec.workload.virtual_address:
            vip = cluster.vip_url()
            if vip is None:
                raise LabError("the workload uses the virtual address, and this cluster has none")
            urls, nodes = [vip], (VIRTUAL_NODE,)
        traits = self.parts.target
        plans = worker_plans(
            spec.workload,
            urls,
            nodes,
            self.clock.start_ns,
            traits.queue_prefix,
            traits.consumer_options,
        )
        log_dir = self.folder.path / "workers"
        log_dir.mkdir(exist_ok=True)
        for plan in plans:
            worker = WorkerProcess(plan, self.history, log_dir, self.events, self.watch)
            self.workers.append(worker)
        producers = [w for w in self.workers if w.plan.role == "producer"]
        consumers = [w for w in self.workers if w.plan.role == "consumer"]
        # Consumers that do not consume during the load start only to drain, at the end.
        early = self.workers if spec.workload.consume_during_load else producers
        for worker in early:
            worker.start()
        self.phase("load")
        self._wait_for_senders(producers)
        load_started = time.monotonic_ns()
        with Nemesis(
            cluster,
            events=self.events,
            log=self._log_applied,
            clock_ns=time.monotonic_ns,
            on_change=self.on_fault,
        ) as nemesis:
            self.nemesis = nemesis
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
        self.stop_if_a_write_failed()

    def _wait_for_senders(self, producers: list[WorkerProcess]) -> None:
        """The schedule and the load's length count from a load that flows: until every
        producer has recorded an operation (a worker takes seconds to start on a busy
        machine, and a fault before that strikes an idle cluster), or one has exited, or
        `SENDERS_DEADLINE_S` passed (then the run goes on, and an event says so)."""
        names = {w.plan.process for w in producers}
        started = time.monotonic()

        def sending() -> bool:
            return names <= self.history.processes or not all(w.running for w in producers)

        if not self.wait(SENDERS_DEADLINE_S, until=sending):
            self.events.emit("workload.slow_start", None, waited_s=SENDERS_DEADLINE_S)
        self.events.emit("workload.flowing", None, after_s=round(time.monotonic() - started, 3))

    def _snapshot_nodes(self, cluster: Cluster) -> None:
        """Store listings and the nodes' own view, taken at the end."""
        plan = cluster.plan
        if plan is None:
            return
        for name, status in cluster.statuses().items():
            node = plan.node(name)
            data_dir = node.data_dir
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
            self.write_json(node.node_dir / "store.json", listing)
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
    parts: RunParts,
    runs_dir: Path,
    *,
    progress: Progress | None = None,
    replay_of: ReplayOf | None = None,
    reproduce: str | None = None,
) -> RunOutcome:
    """Run `spec` into a new run folder under `runs_dir`, judge it, write result.json
    (`replay_of`: the run this one repeats, so result.json says whether it reproduced it;
    `reproduce`: the command that runs it again, when it is not a `lab` command — a test's)."""
    shown = progress or NoProgress()
    spec = replace(spec, git_revision=git_revision(LAB_ROOT))
    spec = _with_version(spec, parts.target)
    validate_spec(spec)
    # A group the target cannot form, or a fault the cluster cannot apply, is refused before
    # anything starts or is written: this cluster is made only to be asked what it can do.
    probe = parts.cluster(spec, runs_dir / spec.scenario, NoEvents())
    probe.check()
    preflight(probe, spec.schedule)
    if parts.target.deviations is not None:  # a broken declaration file fails now, not at the end
        load_declarations(Path(parts.target.deviations))
    free_at_start = check_space(runs_dir, spec)
    parts.prepare()  # the target's distribution at its version, fetched on first use
    folder = RunFolder.create(runs_dir, spec.scenario, spec.seed)
    reproduce = reproduce or reproduce_command(spec, folder.path, parts)
    entry = register(folder.path)
    try:
        run = _Run(spec, parts, folder, shown)
        with _interrupts_as_exceptions():
            try:
                run.execute()
                # Judging is a phase too: stopped here, the run still says so.
                run.current_phase = "judge"
                _write_copies(folder)
                prediction = parts.scenario.prediction_for(spec)
                timings = parts.timings_of(spec)
                judgement = judge_run(
                    folder.history, folder.events, prediction, parts.target, timings
                )
                run.write_json(folder.result, _judged(spec, judgement, reproduce, replay_of))
                run.stop_if_a_write_failed()  # result.json could not be written
            except BaseException as exc:
                stopped = stopped_by_a_write(exc)
                healed = tuple(run.nemesis.healed_at_end) if run.nemesis is not None else ()
                how = (
                    interruption_by_a_signal(exc, run.current_phase, healed)
                    if stopped is None
                    else interruption_of(stopped, exc, run.current_phase, healed)
                )
                _write_copies(folder)
                if how is None:
                    result = RunResult.failed(spec, exc, reproduce, replay_of)
                else:
                    judged = _judge_what_is_there(folder, spec, parts)
                    result = RunResult.stopped(spec, how, reproduce, judged, replay_of)
                run.write_json(folder.result, result.to_json())
                if stopped is not None and how is not None:
                    written = folder.result.is_file()
                    needed = space_needed(spec)
                    raise one_line(
                        stopped, how, runs_dir, folder.path, needed, free_at_start, written
                    ) from None
                exc.add_note(f"run folder: {folder.path}")
                exc.add_note(f"reproduce: {reproduce}")
                raise
    finally:
        unregister(entry)  # after result.json: a lab killed before it is settled next time
    return RunOutcome(folder, spec, judgement, reproduce)


def _judged(
    spec: RunSpec, judgement: Judgement, reproduce: str, replay_of: ReplayOf | None
) -> dict[str, Any]:
    return RunResult.judged(spec, judgement, reproduce, replay_of).to_json()


def _with_version(spec: RunSpec, target: TargetTraits) -> RunSpec:
    """The spec with the version its target runs, recorded only when it is not the target's
    default (so a spec made before versions could be chosen keeps its id)."""
    asked = spec.target_version
    if asked is not None and asked != target.version:
        raise LabError(f"the spec names {spec.target_ref}, and the target runs {target.version}")
    return replace(spec, target_version=target.chosen_version)


def _write_copies(folder: RunFolder) -> None:
    """history.parquet and events.parquet beside the JSONL. A history the copies cannot be
    made from is left to the judge to report; a missing copy is rebuilt when one is needed."""
    with contextlib.suppress(LabError, OSError, ValueError):
        write_columnar_copies(folder.path)


def _judge_what_is_there(folder: RunFolder, spec: RunSpec, parts: RunParts) -> Judgement | None:
    """The checker's result and figures of an interrupted run's history, when it can be read."""
    try:
        prediction = parts.scenario.prediction_for(spec)
        timings = parts.timings_of(spec)
        return judge_run(folder.history, folder.events, prediction, parts.target, timings)
    except (LabError, OSError, ValueError, KeyboardInterrupt):
        return None  # unreadable, or a second Ctrl-C: the result says interrupted without it
