"""One run of a campaign: a fresh draw or a replay of a recorded failure, run as its own
`lab run` process (so a run that hangs can be interrupted, and its heals still run; forked
from a warm interpreter that imported the lab once, see warm.py), into
an ordinary run folder under the campaign's folder; then its record, and the failure
database told what it showed.

    Task(number, cell, seed)                       a fresh draw
    Task(number, cell, seed, failure=Failure)      a replay of a recorded failure
    Task(number, cell, seed, spec=…, origin=…)     a guided run of an explicit spec (guide.py)
    running = RunningTask(task, campaign_dir)      started; `poll()` → RunRecord when done
    record = run_task(task, campaign_dir)          the same, waiting (the pytest entry point)
    settle(record, task, campaign_dir, db)         the failure database updated

Both entry points (`lab campaign`, `pytest --lab-campaign`) run tasks through here, and a
task's record is written to `records/<number>.json`, from which campaign.json is made.
"""

from __future__ import annotations

import datetime as dt
import json
import signal
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from lab.campaign.failures import Failure, FailureDB
from lab.campaign.plan import Cell
from lab.campaign.warm import start_lab
from lab.ground.files import write_json

__all__ = ["RunRecord", "RunningTask", "Task", "run_task", "settle"]

FRESH = "fresh"
REPLAY = "replay"


@dataclass(frozen=True)
class Task:
    """A run to make. `spec` (a spec.json's content): run it as it is, with `lab run --spec`;
    `origin` and `parent`: how a guided campaign made it (lab.campaign.guide)."""

    number: int
    cell: Cell
    seed: int
    failure: Failure | None = None
    hosts_file: Path | None = None  # where a run on hosts runs (not part of its record)
    spec: Mapping[str, Any] | None = None
    origin: str = "seed"
    parent: int | None = None

    @property
    def kind(self) -> str:
        return FRESH if self.failure is None else REPLAY

    def argv(self, campaign_dir: Path) -> list[str]:
        runs = str(campaign_dir / "runs")
        if self.failure is not None:
            spec = campaign_dir / "replays" / f"{self.failure.id}.json"
            spec.parent.mkdir(parents=True, exist_ok=True)
            write_json(spec, dict(self.failure.spec))
            return ["run", "--spec", str(spec), "--runs-dir", runs, *self._hosts()]
        if self.spec is not None:
            spec = campaign_dir / "specs" / f"{self.number}.json"
            spec.parent.mkdir(parents=True, exist_ok=True)
            write_json(spec, dict(self.spec))
            return ["run", "--spec", str(spec), "--runs-dir", runs, *self._hosts()]
        cell = self.cell
        return [
            *("run", cell.scenario, "--seed", str(self.seed)),
            *("--backend", cell.backend, "--target", cell.target, "--mode", cell.mode),
            *(f"--target-setting={k}={v}" for k, v in cell.settings),
            *("--runs-dir", runs),
            *self._hosts(),
        ]

    def _hosts(self) -> list[str]:
        if self.cell.backend != "ssh" or self.hosts_file is None:
            return []
        return ["--hosts", str(self.hosts_file)]


@dataclass(frozen=True)
class RunRecord:
    """What one task ran and showed. `folder` is relative to the campaign's folder (None
    when no run folder was made); `failure` the failure database's id of what it showed."""

    number: int
    kind: str
    scenario: str
    target: str
    backend: str
    mode: str
    seed: int
    verdict: str
    violations: tuple[str, ...]
    seconds: float
    folder: str | None
    error: str | None = None
    failure: str | None = None
    new_failure: bool = False
    reproduced: bool | None = None  # a replay: did the recorded violation come back
    started: str = ""  # UTC, when its `lab run` began
    origin: str = "seed"  # seed | fresh | directed | an operator | replay (guide.py)
    parent: int | None = None  # the run a mutation was made from

    @property
    def cell(self) -> Cell:
        return Cell(self.scenario, self.target, self.backend, self.mode)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["violations"] = list(self.violations)
        return out

    @staticmethod
    def from_json(raw: dict[str, Any]) -> RunRecord:
        fields = dict(raw)
        fields["violations"] = tuple(fields.get("violations", ()))
        return RunRecord(**fields)


class RunningTask:
    """A task's `lab run` process; its output goes to `logs/<number>.out` and `.err`."""

    def __init__(self, task: Task, campaign_dir: Path) -> None:
        self.task = task
        self.campaign_dir = campaign_dir
        logs = campaign_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.out_path = logs / f"{task.number}.out"
        self.err_path = logs / f"{task.number}.err"
        self.started = time.monotonic()
        self.started_utc = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self.cwd = Path.cwd()  # where the run starts (lab.campaign.warm): its paths' base
        self.proc = start_lab(task.argv(campaign_dir), self.out_path, self.err_path)
        self.interrupted = False

    def poll(self) -> RunRecord | None:
        code = self.proc.poll()
        return None if code is None else self._record(code)

    def wait(self) -> RunRecord:
        return self._record(self.proc.wait())

    def interrupt(self) -> None:
        """Ctrl-C for the run: it heals every fault and stops what it started."""
        if self.proc.poll() is None:
            self.interrupted = True
            self.proc.send_signal(signal.SIGINT)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def _folder(self) -> Path | None:
        for line in self.out_path.read_text(encoding="utf-8", errors="replace").splitlines():
            candidate = Path(line.strip())
            if not candidate.is_absolute():
                candidate = self.cwd / candidate
            if line.strip() and (candidate / "spec.json").is_file():
                return candidate
        return None

    def _record(self, returncode: int) -> RunRecord:
        task, cell = self.task, self.task.cell
        seconds = round(time.monotonic() - self.started, 3)
        folder = self._folder()
        verdict, error = "unknown", None
        kinds: tuple[str, ...] = ("error",)
        if folder is not None and (folder / "result.json").is_file():
            result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
            verdict = str(result.get("verdict", "unknown"))
            kinds = tuple(str(k) for k in result.get("violations", ()))
            error = result.get("error")
        else:
            lines = self.err_path.read_text(encoding="utf-8", errors="replace").splitlines()
            error = next((x for x in reversed(lines) if x.startswith("lab:")), None) or (
                f"lab run ended with status {returncode} and no result"
            )
        if self.interrupted:
            error = f"interrupted at the end of the campaign's budget; {error or ''}".strip("; ")
        return RunRecord(
            number=task.number,
            kind=task.kind,
            scenario=cell.scenario,
            target=cell.target,
            backend=cell.backend,
            mode=cell.mode,
            seed=task.seed,
            verdict=verdict,
            violations=kinds,
            seconds=seconds,
            folder=None
            if folder is None
            else str(folder.relative_to(self.cwd / self.campaign_dir)),
            error=error,
            failure=None if task.failure is None else task.failure.id,
            started=self.started_utc,
            origin="replay" if task.failure is not None else task.origin,
            parent=task.parent,
        )


def settle(record: RunRecord, task: Task, campaign_dir: Path, db: FailureDB) -> RunRecord:
    """Tell the failure database what the run showed; write and return its final record."""
    if task.failure is not None:
        failure = db.add_outcome(
            task.failure, record.verdict, record.violations, record.folder or ""
        )
        record = replace(record, reproduced=failure.outcomes[-1].reproduced)
    elif record.verdict != "held" and record.folder is not None:
        seen = Failure.of_run(campaign_dir / record.folder)
        if seen is not None:
            saved, new = db.record(seen)
            record = replace(record, failure=saved.id, new_failure=new)
    write_json(_record_path(campaign_dir, record.number), record.to_json())
    return record


def _record_path(campaign_dir: Path, number: int) -> Path:
    path = campaign_dir / "records" / f"{number}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def run_task(task: Task, campaign_dir: Path, db: FailureDB) -> RunRecord:
    """Run a task to its end and settle it."""
    running = RunningTask(task, campaign_dir)
    try:
        record = running.wait()
    except BaseException:
        running.interrupt()
        running.wait()
        raise
    return settle(record, task, campaign_dir, db)
