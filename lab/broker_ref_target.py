"""The reference broker as a target: `python -m broker_ref --config node.json`."""

from __future__ import annotations

import json
import sys

import requests

from lab.errors import UsageError
from lab.ports import HOST
from lab.target import ClusterPlan, LogRecord, NodePlan, NodeStatus, parse_oplog_line

__all__ = ["BrokerRefTarget"]


class BrokerRefTarget:
    name = "broker_ref"

    def command(self, cluster: ClusterPlan, node: NodePlan) -> list[str]:
        if len(cluster.nodes) != 1:
            raise UsageError("broker_ref runs as a single node in this version: use --nodes 1")
        config = {
            "name": node.name,
            "group": cluster.group,
            "host": HOST,
            "amqp_port": node.amqp_port,
            "management_port": node.management_port,
            "data_dir": str(node.data_dir),
            "coalescing_sync": cluster.durability.coalescing_sync,
            "idle_timeout_s": 2.0,
        }
        path = node.node_dir / "config.json"
        path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        return [sys.executable, "-m", "broker_ref", "--config", str(path)]

    def status(self, node: NodePlan, timeout_s: float = 1.0) -> NodeStatus | None:
        url = f"http://{HOST}:{node.management_port}/api/latest/virtualhostnode/{node.name}"
        try:
            reply = requests.get(url, timeout=timeout_s)
            if not reply.ok:
                return None
            body = reply.json()
        except (requests.RequestException, ValueError):
            return None
        queues = body.get("queues") or {}
        return NodeStatus(
            name=node.name,
            role=str(body.get("role", "UNKNOWN")),
            last_transaction_id=body.get("lastKnownReplicationTransactionId"),
            queue_depths={q: int(v.get("depth", 0)) for q, v in queues.items()},
        )

    def parse_log_line(self, line: str) -> LogRecord | None:
        return parse_oplog_line(line)
