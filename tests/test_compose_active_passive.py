"""docker-compose's active-passive profile: three brokers and the lab's cluster manager in
containers; clients use the virtual address; a backup cut off from the primary through the
profile's Toxiproxy is no longer waited for, and is ready again once its links are back; the
primary's container is killed and the manager promotes a ready backup; everything is
removed."""

from __future__ import annotations

from typing import Any

import pytest
from compose_helpers import NAMES, compose_ready, get_json, profile_up, retry, set_proxy, wait_for

from lab.bench.probe import send_one

pytestmark = pytest.mark.docker

VARIABLES = [
    "LAB_AP_TOXIPROXY_PORT",
    "LAB_AP_VIP_PORT",
    *(f"LAB_AP{i}_AMQP_PORT" for i in (1, 2, 3)),
    *(f"LAB_AP{i}_MANAGEMENT_PORT" for i in (1, 2, 3)),
]


def _ha(ports: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Each broker's HA view (status, primary, readyBackups, …); {} when it does not answer."""
    found = {}
    for name, port in ports.items():
        body = get_json(port, f"/api/latest/ha/{name}")
        found[name] = body if isinstance(body, dict) else {}
    return found


def _statuses(ports: dict[str, int]) -> dict[str, str | None]:
    return {name: view.get("status") for name, view in _ha(ports).items()}


def test_the_active_passive_profile_fails_over_to_a_ready_backup() -> None:
    engine = compose_ready()
    services = ("ap1", "ap2", "ap3", "ap-toxiproxy", "ap-manager")
    with profile_up(engine, "ap", VARIABLES, "active-passive", services) as up:
        management = {n: up.ports[f"LAB_AP{i}_MANAGEMENT_PORT"] for i, n in enumerate(NAMES, 1)}
        toxiproxy = up.ports["LAB_AP_TOXIPROXY_PORT"]
        vip = f"amqp://127.0.0.1:{up.ports['LAB_AP_VIP_PORT']}"
        seen = wait_for(
            lambda: _statuses(management),
            lambda s: sorted(map(str, s.values())) == ["active", "ready", "ready"],
            "a primary and two ready backups",
        )
        primary = next(n for n, s in seen.items() if s == "active")
        send_one(vip)

        # Cut one backup off from the primary: the primary stops waiting for it (twice the
        # link heartbeat) and goes on taking messages; with its links back, it catches up.
        backup = next(n for n in NAMES if n != primary)
        links = (f"{primary}_to_{backup}", f"{backup}_to_{primary}")
        wait_for(
            lambda: _ha(management)[primary].get("readyBackups"),
            lambda ready: ready is not None and backup in ready,
            "the primary waiting for the backup",
        )
        for link in links:
            set_proxy(toxiproxy, link, False)
        wait_for(
            lambda: _ha(management)[primary].get("readyBackups"),
            lambda ready: ready is not None and backup not in ready,
            "the primary gave up on the cut backup",
            30.0,
        )
        retry(lambda: send_one(vip, timeout_s=5), "a message without the cut backup")
        for link in links:
            set_proxy(toxiproxy, link, True)
        wait_for(
            lambda: _ha(management),
            lambda v: (
                backup in v[primary].get("readyBackups", ()) and v[backup].get("status") == "ready"
            ),
            "the backup ready again",
            60.0,
        )

        killed = up.run("kill", f"ap{NAMES.index(primary) + 1}")
        assert killed.returncode == 0, killed.stderr
        wait_for(
            lambda: _statuses(management),
            lambda s: any(s[n] == "active" for n in NAMES if n != primary),
            "a backup promoted",
        )
        # clients of the virtual address reach the new primary
        retry(lambda: send_one(vip, timeout_s=3), "the virtual address reaching the new primary")
        logs = up.run("logs", "ap-manager").stdout
        assert '"manager.promote"' in logs and '"manager.vip"' in logs
