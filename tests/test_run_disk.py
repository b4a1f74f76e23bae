"""The lab's own disk: a run that clearly does not fit is refused before anything starts, and
a run whose disk fills stops at its first failed write — load stopped, faults healed, every
process stopped, one line naming the full folder, exit status 2, whole JSONL lines and a
result.json whole or absent. The real cases mount a small tmpfs (root only)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest

from clients.event_loop import stderr_log
from clients.op_writer import OpWriter, is_note
from lab.bench.interrupt import leftovers_of
from lab.cli.main import main
from lab.ground.errors import DiskFullError
from lab.ground.spec import RunSpec, Topology, Workload
from lab.run.disk import WriteWatch, check_space, space_needed
from lab.run.folder import HistoryRecorder, JsonlWriter
from scenarios.catalog import scenario_named


@contextlib.contextmanager
def _tmpfs(point: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `point` for the test; unmounted whatever happens."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    point.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)], check=True)
    try:
        yield point
    finally:
        done = subprocess.run(["umount", str(point)], capture_output=True, check=False)
        if done.returncode != 0:  # still busy: detached now, gone when the last user goes
            subprocess.run(["umount", "-l", str(point)], check=False)


def _fill(folder: Path) -> None:
    """Write into `folder` until its file system is full."""
    block = b"\0" * 65536
    with contextlib.suppress(OSError), (folder / "filler").open("wb", buffering=0) as out:
        while True:
            out.write(block)


# ---- the estimate and the check before a run ----------------------------------------------------


def _spec(**workload: float) -> RunSpec:
    return RunSpec(scenario="incident", seed=1, workload=Workload(**workload))  # type: ignore[arg-type]


def test_the_estimate_follows_the_workload_and_where_the_stores_live() -> None:
    base = space_needed(_spec(rate=100.0, duration_s=10.0))
    assert space_needed(_spec(rate=200.0, duration_s=10.0)) > base
    assert space_needed(_spec(rate=100.0, duration_s=20.0)) > base
    more_nodes = RunSpec(scenario="incident", seed=1, topology=Topology(nodes=5))
    assert space_needed(more_nodes) > space_needed(RunSpec(scenario="incident", seed=1))
    spec = _spec(rate=100.0, duration_s=10.0)
    in_containers = RunSpec(scenario="incident", seed=1, backend="docker", workload=spec.workload)
    assert space_needed(in_containers) < space_needed(spec)  # their stores are on volumes
    # master-failure wrote 1.8 MB at 1,625 messages of its 3,200 planned (a loaded machine)
    needed = space_needed(scenario_named("master-failure").spec(1))
    assert 1_800_000 < needed < 8_000_000


def test_a_run_that_cannot_fit_is_refused_naming_the_folder(tmp_path: Path) -> None:
    huge = _spec(rate=1e9, duration_s=1e6)
    with pytest.raises(DiskFullError, match=rf"^{tmp_path}: .* free on its file system .*needs"):
        check_space(tmp_path, huge)
    assert check_space(tmp_path / "not" / "yet", _spec()) is not None  # the nearest folder


def test_lab_run_refuses_a_runs_folder_far_too_small(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lab.cli.orphans.clear_orphans", lambda log=None: [])
    with _tmpfs(tmp_path / "small", "400k") as small:
        code = main(["run", "master-failure", "--seed", "1", "--runs-dir", str(small / "runs")])
        err = capsys.readouterr().err
        assert code == 2, err
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"lab: error: {small / 'runs'}: "), err
        assert "free on its file system" in err and "needs about" in err
        assert list(small.iterdir()) == []  # nothing created


# ---- the writers ------------------------------------------------------------------------------


def test_a_writer_that_fills_its_disk_keeps_whole_lines_and_tells_the_watch(
    tmp_path: Path,
) -> None:
    with _tmpfs(tmp_path / "small", "64k") as small:
        watch = WriteWatch()
        recorder = HistoryRecorder(small / "history.jsonl", watch)
        events = JsonlWriter(small / "events.jsonl", watch)
        op = {"time": 1, "process": "p1", "type": "ok", "f": "send", "value": "p1-1" + "x" * 80}
        for _ in range(5000):
            recorder.record(op)
        events.write({"v": 1, "kind": "after"})  # dropped quietly once the disk is full
        recorder.close()
        events.close()
        failure = watch.first
        assert failure is not None and failure.full and failure.path.name == "history.jsonl"
        data = (small / "history.jsonl").read_bytes()
        assert data.endswith(b"\n")
        lines = [json.loads(line) for line in data.splitlines()]
        assert (
            [line["index"] for line in lines]
            == list(range(len(lines)))
            == list(range(recorder.count))
        )
        assert recorder.acknowledged == recorder.count


def test_a_writer_without_a_watch_raises_and_keeps_whole_lines(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "small", "8k") as small:
        writer = JsonlWriter(small / "events.jsonl")
        with pytest.raises(OSError):
            for number in range(1000):
                writer.write({"number": number, "pad": "y" * 100})
        writer.close()
        assert (small / "events.jsonl").read_bytes().endswith(b"\n")


class _FullStream(StringIO):
    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")


def test_a_worker_that_cannot_write_its_log_carries_on_and_tells_the_runner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = StringIO()
    writer = OpWriter("p1", 0, out, clock=lambda: 5)
    monkeypatch.setattr(sys, "stderr", _FullStream())
    log = stderr_log("p1", writer.log_failed)
    log("no link on n1")
    log("no link on n2")  # told once
    writer.write("invoke", "send", "p1-1")
    notes = [json.loads(line) for line in out.getvalue().splitlines()]
    assert notes[0] == {
        "process": "p1",
        "log_failed": "stderr",
        "errno": 28,
        "error": "No space left on device",
    }
    assert [is_note(n) for n in notes] == [True, False]


# ---- a real run whose disk fills -------------------------------------------------------------

SMALL_RUN = """
scenario = "incident"
seed = 3
[topology]
nodes = 1
[workload]
producers = 1
consumers = 1
rate = 50.0
duration_s = 60.0
"""


@pytest.mark.processes
def test_a_run_whose_disk_fills_stops_heals_and_says_so_in_one_line(tmp_path: Path) -> None:
    incident = tmp_path / "small.toml"
    incident.write_text(SMALL_RUN, encoding="utf-8")
    with _tmpfs(tmp_path / "small", "3m") as small:
        runs = small / "runs"
        proc = subprocess.Popen(
            [sys.executable, "-m", "lab", "run", "--spec", str(incident), "--runs-dir", str(runs)],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            folder = _loading(runs, proc)
            _fill(small)  # another writer takes the rest of the disk mid-run
            _out, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        errors = [line for line in err.splitlines() if line.startswith("lab: error:")]
        assert proc.returncode == 2, err
        assert len(errors) == 1 and "Traceback" not in err, err
        assert errors[0] == err.splitlines()[-1]
        assert f"{runs} (file system {small}) is full: the run {folder.name} " in errors[0]
        assert "it needs about" in errors[0] and "every process stopped" in errors[0]
        assert leftovers_of(folder) == []
        assert not any(str(small) in cmdline for cmdline in _command_lines())
        for jsonl in folder.rglob("*.jsonl"):  # whole lines, every one readable
            data = jsonl.read_bytes()
            assert not data or data.endswith(b"\n"), jsonl
            for line in data.splitlines():
                json.loads(line)
        result = folder / "result.json"
        if result.exists():  # written whole, or not at all
            said = json.loads(result.read_text(encoding="utf-8"))
            assert said["verdict"] == "interrupted" and said["interrupted"]["signal"] == "ENOSPC"
            assert "result.json says interrupted" in errors[0]
        else:
            assert "no result.json" in errors[0]
        assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []


def _loading(runs: Path, proc: subprocess.Popen[str]) -> Path:
    """The run's folder, once its load has begun (however long the machine takes)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        for events in runs.glob("incident/2*/events.jsonl"):
            if '"phase":"load"' in events.read_text(encoding="utf-8"):
                return events.parent
        assert proc.poll() is None, proc.communicate()[1]
        time.sleep(0.1)
    raise AssertionError("the run's load never began")


def _command_lines() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
    return found
