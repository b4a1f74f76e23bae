"""`lab up` leaves a cluster running behind its proxies; `lab down` removes all of it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_lab

from lab.bench.probe import send_one

pytestmark = pytest.mark.processes


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return (
        Path(f"/proc/{pid}").exists()
        and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
    )


def test_up_send_down(tmp_path: Path) -> None:
    up = run_lab("up", cwd=tmp_path)
    state = tmp_path / ".lab" / "cluster.json"
    try:
        assert up.returncode == 0, up.stderr
        described = json.loads(up.stdout)
        [node] = described["nodes"]
        assert node["name"] == "n1"
        assert node["amqp"].startswith("amqp://127.0.0.1:")
        assert node["management"].startswith("http://127.0.0.1:")
        send_one(node["amqp"])
        again = run_lab("up", cwd=tmp_path)
        assert again.returncode == 2 and "already up" in again.stderr
        pids = json.loads(state.read_text())["pids"]
        assert set(pids) == {"n1", "toxiproxy"}
        assert all(_alive(pid) for pid in pids.values())
    finally:
        down = run_lab("down", cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert not state.exists()
    assert not any(_alive(pid) for pid in pids.values())
    assert run_lab("down", cwd=tmp_path).returncode == 0
