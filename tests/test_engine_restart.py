"""A `lab up` cluster in containers outlives the Docker engine's restart: after the engine
stops and starts again, `lab down` still finds every container, network and volume of the
cluster by its labels and removes them all.

Opt-in (`long`): it stops the engine that every other Docker test running beside it uses.
Run it alone: `.venv/bin/pytest tests/test_engine_restart.py --lab-long`."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from conftest import run_lab

from lab.backends.docker.engine import can_install, connect, engine_answers, ensure_engine
from lab.backends.docker.labels import RUN
from lab.backends.docker.reaper import leftovers
from lab.pytest_plugin import skip_unless_ci

pytestmark = [pytest.mark.docker, pytest.mark.long]

PID_FILE = Path("/var/run/docker.pid")


def _restart_engine() -> None:
    """Stop dockerd (SIGTERM, as a service manager does) and start it again the lab's way."""
    pid = int(PID_FILE.read_text().strip())
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists(), "dockerd did not stop within 60 s"
    assert not engine_answers()
    ensure_engine(print).close()


def test_lab_down_removes_a_cluster_after_the_engine_restarted(tmp_path: Path) -> None:
    if not can_install() or not PID_FILE.is_file():
        skip_unless_ci("restarting the engine needs the dockerd the lab starts itself (as root)")
    ensure_engine(print).close()
    up = run_lab("up", "--backend", "docker", "--nodes", "3", cwd=tmp_path, timeout=300)
    try:
        assert up.returncode == 0, up.stderr
        run_id = json.loads((tmp_path / ".lab" / "cluster.json").read_text())["docker_run"]
        _restart_engine()
        client = connect()
        try:
            assert not leftovers(client, f"{RUN}={run_id}").empty  # still there, stopped
        finally:
            client.close()
    finally:
        down = run_lab("down", cwd=tmp_path, timeout=300)
    assert down.returncode == 0, down.stderr
    client = connect()
    try:
        assert leftovers(client, f"{RUN}={run_id}").empty
    finally:
        client.close()
