"""`lab up` leaves a cluster running behind its proxies; `lab down` removes all of it."""

from __future__ import annotations

import json
import os
import time
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


def _ha(tmp_path: Path, *args: str) -> tuple[int, str]:
    done = run_lab("ha", *args, cwd=tmp_path)
    return done.returncode, (done.stdout + done.stderr).strip()


def test_an_active_passive_cluster_outlives_lab_up_and_its_manager_fails_over(
    tmp_path: Path,
) -> None:
    up = run_lab("up", "--nodes", "3", "--mode", "active-passive", cwd=tmp_path, timeout=180)
    state = tmp_path / ".lab" / "cluster.json"
    try:
        assert up.returncode == 0, up.stderr
        described = json.loads(up.stdout)
        vip = described["virtual_address"]
        send_one(vip)
        recorded = json.loads(state.read_text())
        assert recorded["mode"] == "active-passive"
        pids = recorded["pids"]
        assert {"manager", "n1", "n2", "n3", "toxiproxy"} == set(pids)
        code, shown = _ha(tmp_path, "status", "--all")
        assert code == 0 and shown.count(" ready") == 2 and shown.count(" active") == 1, shown
        primary = next(line.split()[0] for line in shown.splitlines() if line.endswith("active"))
        assert _ha(tmp_path, "status", "--broker", primary, "--expect", "primary")[0] == 0
        backup = next(n for n in ("n1", "n2", "n3") if n != primary)
        assert _ha(tmp_path, "status", "--broker", backup, "--expect", "primary")[0] == 1
        code, said = _ha(tmp_path, "promote", backup)
        assert code == 2 and "cluster manager only" in said
        assert _ha(tmp_path, "replicate", "audit", "none")[0] == 0
        os.kill(pids[primary], 9)  # the process the manager did not start dies
        deadline = time.monotonic() + 30
        while True:
            code, shown = _ha(tmp_path, "status", "--all")
            actives = [line.split()[0] for line in shown.splitlines() if line.endswith("active")]
            if actives and actives != [primary] and f"{primary} " in shown:
                break
            assert time.monotonic() < deadline, shown
            time.sleep(0.5)
        send_one(vip)  # the virtual address follows the new primary
        events = (tmp_path / ".lab" / "cluster" / "manager-events.jsonl").read_text()
        assert '"manager.restart"' in events and '"manager.promote"' in events
    finally:
        down = run_lab("down", cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert "manager" in down.stderr and "(restarted)" in down.stderr
    assert not state.exists()
    assert not any(_alive(pid) for pid in pids.values())
