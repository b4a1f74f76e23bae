"""A node's plan as its container sees it.

The node listens on fixed ports on all its interfaces and keeps its data on /data;
the target writes its configuration for that view (Target.container_launch).
"""

from __future__ import annotations

from pathlib import Path

from lab.ground.nodes import NodePlan

__all__ = [
    "AMQP_PORT",
    "DATA_DIR",
    "MANAGEMENT_PORT",
    "REPLICATION_PORT",
    "container_node_plan",
]

AMQP_PORT = 5672
MANAGEMENT_PORT = 8080
REPLICATION_PORT = 7000
DATA_DIR = Path("/data")


def container_node_plan(name: str, node_dir: Path) -> NodePlan:
    """The node's plan inside its container: fixed ports, data on /data."""
    return NodePlan(
        name=name,
        amqp_port=AMQP_PORT,
        management_port=MANAGEMENT_PORT,
        replication_port=REPLICATION_PORT,
        data_dir=DATA_DIR,
        node_dir=node_dir,
    )
