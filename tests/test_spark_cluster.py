"""`lab report --master spark://…` on a real standalone cluster: a master and a worker started
with pyspark's own `spark-class` on 127.0.0.1, the run folders and the store on a path both
the driver and the executors see. The report equals the local one."""

from __future__ import annotations

import argparse
import csv
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession

from lab.bench.synth_runs import synthesize_runs
from lab.ground.ports import free_ports
from spark_reports.cli import add_arguments, run_report
from spark_reports.manifest import read_manifest

ROOT = Path(__file__).resolve().parent.parent
SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
TABLES = ("reliability", "broken_runs", "unreadable_runs", "performance", "trend")


def _free_port() -> int:
    """A port on 127.0.0.1 nothing listens on, reserved for this process (lab.ground.ports):
    below the ephemeral range, so no outgoing connection takes it before it is used."""
    return free_ports(1)[0]


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if log.is_file() and text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-3000:] if log.is_file() else "(no log)"
    raise AssertionError(f"{text!r} not in {log} after {seconds} s:\n{tail}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a daemon this test started, and everything it started (its own session)."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)


@pytest.fixture
def standalone_master(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A standalone master and one worker (2 cores) on 127.0.0.1; (URL, worker dir)."""
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_CLASS.parent.parent),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    port, work = _free_port(), tmp_path / "worker"
    work.mkdir()
    url = f"spark://127.0.0.1:{port}"
    daemons: list[subprocess.Popen[bytes]] = []

    def start(log: Path, *arguments: str) -> subprocess.Popen[bytes]:
        with log.open("wb") as output:
            daemon = subprocess.Popen(
                [str(SPARK_CLASS), *arguments],
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        daemons.append(daemon)
        return daemon

    try:
        master_log = tmp_path / "master.log"
        master = start(
            master_log,
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port())),
        )
        _wait_for(master_log, "I have been elected leader", master, 90)
        worker_log = tmp_path / "worker.log"
        worker = start(
            worker_log,
            "org.apache.spark.deploy.worker.Worker",
            url,
            *("--host", "127.0.0.1", "--cores", "2", "--memory", "2g"),
            *("--webui-port", str(_free_port()), "--work-dir", str(work)),
        )
        _wait_for(worker_log, "Successfully registered with master", worker, 90)
        yield url, work
    finally:
        for daemon in reversed(daemons):
            _stop(daemon)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as stream:
        return list(csv.DictReader(stream))


def _same(mine: str, theirs: str) -> bool:
    """Equal cells; numbers may differ in the last bits (sums in another order)."""
    if mine == theirs:
        return True
    try:
        return math.isclose(float(mine), float(theirs), rel_tol=1e-9, abs_tol=1e-9)
    except ValueError:
        return False


@pytest.mark.long  # minutes: a long mode (--lab-long)
@pytest.mark.spark
def test_report_on_a_standalone_cluster_equals_the_local_one(
    spark: SparkSession, standalone_master: tuple[str, Path], tmp_path: Path
) -> None:
    url, work = standalone_master
    runs_dir, store = tmp_path / "shared" / "runs", tmp_path / "shared" / "store"
    synth = synthesize_runs(runs_dir, runs=12, operations_per_run=200, seed=21, partial=2)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    local = tmp_path / "local"
    run_report(parser.parse_args([str(runs_dir), "--out", str(local)]), lambda text: None)
    remote = tmp_path / "remote"
    command = [sys.executable, "-m", "lab", "report", str(runs_dir), "--out", str(remote)]
    completed = subprocess.run(
        [*command, "--master", url, "--compact", str(store)],
        cwd=ROOT,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert f"spark: starting ({url})" in completed.stderr
    executors = [p for p in work.glob("app-*/*") if (p / "stderr").is_file()]
    assert executors, "no executor ran on the worker"
    assert len(read_manifest(store)) == 12 - 2
    for table in TABLES:
        mine, theirs = _rows(remote / f"{table}.csv"), _rows(local / f"{table}.csv")
        assert [list(row) for row in mine] == [list(row) for row in theirs], table
        for row, twin in zip(mine, theirs, strict=True):
            assert all(_same(row[key], twin[key]) for key in row), (table, row, twin)
    broken = {row["run_id"] for row in _rows(remote / "broken_runs.csv")}
    assert broken == set(synth.broken)
    assert (remote / "report.html").is_file()
