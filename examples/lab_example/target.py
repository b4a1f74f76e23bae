"""`example-broker`: the broker as its users run it, as a lab target.

Each node is a broker_ref node with the user's own settings (SETTINGS: slower elections
and heartbeats than the lab's defaults, a cap on connections), started by the user's own
command (lab_example.node). A scenario or an incident may change a setting for its runs
through `group.target_context`, e.g. `{"example-broker": {"election_timeout_s": "1.5"}}`.

The lab asks a target for little: its name and timings, a check of the group it is asked
to form, the command that starts a node (having written its configuration), the node's
status, and how to read its log. Everything else (Toxiproxy, faults, clients, the checker)
is the lab's.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from lab.api import (
    BrokerRefTarget,
    ClusterPlan,
    ContainerLaunch,
    LogRecord,
    NodePlan,
    RestManagement,
    UsageError,
    broker_ref_config,
    parse_oplog_line,
)

NAME = "example-broker"
# The user's settings, as their production nodes have them.
SETTINGS: dict[str, Any] = {
    "heartbeat_interval_s": 0.2,
    "election_timeout_s": 1.0,
    "max_connections": 200,
    "handshake_timeout_s": 5.0,
}


class ExampleBroker(RestManagement):
    """broker_ref nodes with the user's settings and start command; status from the
    management API they serve (RestManagement)."""

    name = NAME
    ready_timeout_s = 30.0  # the group's first election, on a busy machine
    data_disk_mb = 64
    restart_allowance_s = 0.0
    election_allowance_s = 1.0  # elections wait for election_timeout_s 1.0, not 0.6
    proxied_peer_links = True  # nodes dial their peers through the lab's proxies
    founded_by_first_node = False

    def prepare(self) -> None:
        """Nothing to fetch: the broker is installed with the lab."""

    def check(self, cluster: ClusterPlan) -> None:
        BrokerRefTarget().check(cluster)  # the groups broker_ref can form
        unknown = sorted(set(cluster.settings.target_context.get(NAME, {})) - set(SETTINGS))
        if unknown:
            raise UsageError(
                f"group.target_context.{NAME}.{unknown[0]}: not a setting of {NAME} "
                f"(settings: {', '.join(sorted(SETTINGS))})"
            )

    def command(self, cluster: ClusterPlan, node: NodePlan) -> list[str]:
        self.check(cluster)
        config = broker_ref_config(cluster, node, self.credentials)
        overrides = cluster.settings.target_context.get(NAME, {})
        config.update(SETTINGS)
        config.update({key: type(SETTINGS[key])(value) for key, value in overrides.items()})
        path = node.node_dir / "example-broker.json"
        path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        return [sys.executable, "-m", "lab_example.node", "--config", str(path)]

    def container_launch(
        self, cluster: ClusterPlan, node: NodePlan, address_of: dict[str, str]
    ) -> ContainerLaunch:
        raise UsageError(f"{NAME} runs on local processes only")

    def parse_log_line(self, line: str) -> LogRecord | None:
        return parse_oplog_line(line)  # broker_ref's operational log
