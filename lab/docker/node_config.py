"""A node's plan and configuration as its container sees them.

The target writes the node's configuration as it would for a local process; the
container's view differs only in where things are: the node listens on fixed
ports on all its interfaces, keeps its data on /data, and reaches its peers
through `toxiproxy:<port>` on the run's network.
"""

from __future__ import annotations

import json
from pathlib import Path

from lab.errors import ClusterError
from lab.target import ClusterPlan, NodePlan, Target

__all__ = [
    "AMQP_PORT",
    "CONFIG_PATH",
    "DATA_DIR",
    "MANAGEMENT_PORT",
    "REPLICATION_PORT",
    "container_config",
    "container_node_plan",
]

AMQP_PORT = 5672
MANAGEMENT_PORT = 8080
REPLICATION_PORT = 7000
DATA_DIR = Path("/data")
CONFIG_PATH = "/etc/lab/node.json"
LISTEN_HOST = "0.0.0.0"  # inside the container; published only on the host's 127.0.0.1


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


def container_config(target: Target, cluster: ClusterPlan, node: NodePlan) -> bytes:
    """The node's configuration file for its container, from the target's own.

    The target writes its file (named by `--config` in its command line) into the
    node's folder; the listening host becomes every interface of the container, and
    the result is written back, so the run folder shows what the node was given.
    """
    command = target.command(cluster, node)
    try:
        path = Path(command[command.index("--config") + 1])
    except (ValueError, IndexError):
        raise ClusterError(
            f"target {target.name!r} has no --config file to give a container"
        ) from None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ClusterError(f"target {target.name!r}: cannot read {path}: {exc}") from exc
    if "host" in config:
        config["host"] = LISTEN_HOST
    text = json.dumps(config, indent=2) + "\n"
    path.write_text(text, encoding="utf-8")
    return text.encode()
