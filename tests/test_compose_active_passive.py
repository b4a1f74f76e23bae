"""docker-compose's active-passive profile: three brokers and the lab's cluster manager in
containers; clients use the virtual address; the primary's container is killed and the
manager promotes a ready backup; everything is removed."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from typing import Any

import pytest
import requests
from conftest import ROOT

from lab.backends.docker.engine import can_install, engine_answers, ensure_commands, ensure_engine
from lab.backends.docker.images import build_images
from lab.backends.docker.labels import SESSION
from lab.backends.docker.reaper import leftovers
from lab.bench.probe import send_one
from lab.ground.errors import SetupError
from lab.ground.ports import free_ports

pytestmark = pytest.mark.docker

NAMES = ("n1", "n2", "n3")


def _say(line: str) -> None:
    print(line)


def _compose(project: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker-compose", "-p", project, "-f", str(ROOT / "docker-compose.yml"), *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _statuses(ports: dict[str, int]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name, port in ports.items():
        url = f"http://127.0.0.1:{port}/api/latest/ha/{name}"
        try:
            found[name] = requests.get(url, auth=("admin", "admin"), timeout=1).json()["status"]
        except (OSError, ValueError, KeyError):
            found[name] = None
    return found


def _wait(ports: dict[str, int], test: Any, timeout_s: float = 90.0) -> dict[str, str | None]:
    deadline = time.monotonic() + timeout_s
    seen: dict[str, str | None] = {}
    while time.monotonic() < deadline:
        seen = _statuses(ports)
        if test(seen):
            return seen
        time.sleep(0.3)
    raise AssertionError(f"the cluster never got there: {seen}")


def test_the_active_passive_profile_fails_over_to_a_ready_backup() -> None:
    if not engine_answers() and not can_install():
        pytest.skip("no Docker engine answers, and the lab installs one only as root on Debian")
    try:
        ensure_commands({"docker-compose": "docker-compose"}, _say)
    except SetupError as exc:
        pytest.skip(str(exc))
    engine = ensure_engine(_say)
    build_images(_say)
    label = f"test-ap-{uuid.uuid4().hex[:8]}"
    ports = free_ports(8)
    env = {"LAB_SESSION": label, "LAB_AP_TOXIPROXY_PORT": str(ports[0])}
    env["LAB_AP_VIP_PORT"] = str(ports[1])
    management = {}
    for i, name in enumerate(NAMES, start=1):
        env[f"LAB_AP{i}_AMQP_PORT"] = str(ports[1 + i])
        env[f"LAB_AP{i}_MANAGEMENT_PORT"] = str(ports[4 + i])
        management[name] = ports[4 + i]
    project = f"lab{label.replace('-', '')}"
    services = ("ap1", "ap2", "ap3", "ap-toxiproxy", "ap-manager")
    up = _compose(project, env, "--profile", "active-passive", "up", "-d", *services)
    vip = f"amqp://127.0.0.1:{ports[1]}"
    try:
        assert up.returncode == 0, up.stderr
        seen = _wait(
            management, lambda s: sorted(map(str, s.values())) == ["active", "ready", "ready"]
        )
        primary = next(n for n, s in seen.items() if s == "active")
        send_one(vip)
        killed = _compose(project, env, "kill", f"ap{NAMES.index(primary) + 1}")
        assert killed.returncode == 0, killed.stderr
        _wait(management, lambda s: any(s[n] == "active" for n in NAMES if n != primary))
        deadline = time.monotonic() + 30
        while True:  # clients of the virtual address reach the new primary
            try:
                send_one(vip, timeout_s=3)
                break
            except Exception:
                assert time.monotonic() < deadline, (
                    "the virtual address never reached the new primary"
                )
        logs = _compose(project, env, "logs", "ap-manager").stdout
        assert '"manager.promote"' in logs and '"manager.vip"' in logs
    finally:
        down = _compose(
            project, env, "--profile", "active-passive", "down", "-v", "--remove-orphans"
        )
    assert down.returncode == 0, down.stderr
    assert leftovers(engine, f"{SESSION}={label}").empty
