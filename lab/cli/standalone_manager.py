"""A `lab up` active-passive cluster's manager, handed over to a process of its own so that it
outlives `lab up` (lab.manager.remote); `lab down` stops it first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from lab.backends.catalog import Cluster
from lab.backends.managed import VIP
from lab.ground.children import popen_options
from lab.ground.cluster_settings import ActivePassiveSettings
from lab.ground.files import write_json
from lab.ground.ports import HOST

__all__ = ["UP_SETTINGS", "hand_over"]

# The seed's values for fast recovery ("Slow recovery times"), and every queue replicated.
UP_SETTINGS = ActivePassiveSettings(
    ha_replicate="all",
    link_heartbeat_interval_s=5.0,
    link_maintenance_interval_s=0.1,
    status_poll_interval_s=1.0,
)


def _nodes(cluster: Cluster) -> dict[str, dict[str, Any]]:
    assert cluster.plan is not None
    found: dict[str, dict[str, Any]] = {}
    for plan in cluster.plan.nodes:
        node = cluster.node(plan.name)
        entry: dict[str, Any] = {
            "management": f"http://{HOST}:{plan.management_port}",
            "vip_upstream": cluster._vip_upstream(plan.name),
        }
        if cluster.backend == "docker":
            entry["container"] = cluster.containers()[plan.name]  # type: ignore[union-attr]
        else:
            entry.update(
                argv=list(node.command),  # type: ignore[union-attr]
                log=str(plan.node_dir / "broker.log"),
                pid=node.pid,
            )
        found[plan.name] = entry
    return found


def hand_over(cluster: Cluster, work_dir: Path) -> int:
    """Stop the cluster's own manager and start one in a process of its own; its pid."""
    cluster._stop_manager()
    config = work_dir / "manager.json"
    write_json(
        config,
        {
            "nodes": _nodes(cluster),
            "credentials": ["admin", "admin"],
            "toxiproxy": f"http://{HOST}:{cluster.proxy_client().port}",
            "vip": VIP,
            "settings": cluster.group.active_passive.to_json(),
            "events": str(work_dir / "manager-events.jsonl"),
        },
    )
    with (work_dir / "manager.log").open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lab.manager", "--config", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            **popen_options(detached=True),
        )
    return proc.pid
