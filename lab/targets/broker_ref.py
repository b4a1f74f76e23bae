"""The reference broker as a target: `python -m broker_ref --config node.json`.

Each node's configuration names its peers by the Toxiproxy proxy it dials
(`<self>_to_<peer>`), so every node→node link can be cut or slowed; a group of
one node has no peers and behaves as a standalone broker. With spares (nodes that join
the running group later, Topology.spares) it also lists the group's first `members`;
`peers` and `permitted_nodes` name every node, spares included.

Every run's nodes share a group secret made for the run (broker_ref_security.py): a peer
that cannot prove it knows it is refused. A dialling node proves it in its first frame, so
a link cut one way (the one_way_partition fault) still comes up in the direction that
works. `BrokerRefTarget(group_secret=False)` leaves it out (a group without
authentication, as a control); `replication_tls=True` also puts the peer links under mutual
TLS with certificates from a CA made for the run (process backend only). A node's
config.json holds the secret, so it is written readable by its owner only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from lab.ground.errors import UsageError
from lab.ground.nodes import ClusterPlan, NodePlan
from lab.ground.ports import HOST
from lab.ground.spec import GroupSettings
from lab.judge.bounds import Timing, broker_ref_timings
from lab.targets.broker_ref_security import group_secret, tls_files, write_private
from lab.targets.log_lines import LogRecord, parse_oplog_line
from lab.targets.management import Credentials
from lab.targets.on_hosts import HostLaunch, HostPlace, LabService
from lab.targets.protocol import ContainerLaunch, RestManagement
from lab.targets.python_shipment import python_shipment

__all__ = ["CONTAINER_CONFIG", "GROUP_SIZES", "BrokerRefTarget", "check_plan", "node_config"]

GROUP_SIZES = (1, 2, 3, 5)
CONTAINER_CONFIG = "/etc/lab/node.json"


def node_config(
    cluster: ClusterPlan,
    node: NodePlan,
    credentials: Credentials,
    host: str = HOST,
    security: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON configuration of one node of the group; it listens on `host`. `security`
    adds the group secret and TLS keys (BrokerRefTarget.security)."""
    settings = cluster.settings
    peers = dict(cluster.peer_addresses.get(node.name, {}))
    return {
        "name": node.name,
        "group": cluster.group,
        "host": host,
        "amqp_port": node.amqp_port,
        "management_port": node.management_port,
        "replication_port": node.replication_port,
        "data_dir": str(node.data_dir),
        "peers": peers,
        "permitted_nodes": list(cluster.names),
        # The group's first members, when some nodes are spares (they start later and ask
        # to join); without spares every node is a member, broker_ref's default.
        **({"members": list(cluster.members)} if cluster.spares else {}),
        "priority": settings.priority_of(node.name),
        "designated_primary": node.name in settings.designated_primary,
        "quorum_override": settings.quorum_override,
        "durability": cluster.durability.triplet,
        "coalescing_sync": cluster.durability.coalescing_sync,
        "heartbeat_interval_s": settings.heartbeat_interval_s,
        "election_timeout_s": settings.election_timeout_s,
        "insufficient_replicas_timeout_s": settings.insufficient_replicas_timeout_s,
        "rep_stream_timeout_s": settings.rep_stream_timeout_s,
        "idle_timeout_s": 2.0,
        "management_user": credentials.user,
        "management_password": credentials.password,
        **_active_passive_config(settings, node.name),
        **(security or {}),
    }


def _active_passive_config(settings: GroupSettings, node: str) -> dict[str, Any]:
    """The C++ broker's HA options of an active-passive cluster's broker (none otherwise)."""
    if not settings.is_active_passive:
        return {}
    ap = settings.active_passive
    return {
        "mode": settings.mode,
        "ha_replicate": ap.ha_replicate,
        "ha_backup_timeout_s": ap.ha_backup_timeout_s,
        "link_heartbeat_interval_s": ap.link_heartbeat_interval_s,
        "link_maintenance_interval_s": ap.link_maintenance_interval_s,
        "ha_auth": ap.ha_auth,
        "ha_mechanism": "PLAIN" if ap.ha_auth else "ANONYMOUS",
        "ha_username": ap.ha_username if ap.ha_auth else "",
        "ha_password": ap.password_of(node) if ap.ha_auth else "",
    }


def check_plan(cluster: ClusterPlan) -> None:
    """Refuse a group broker_ref cannot form, before anything starts."""
    size = len(cluster.nodes)
    if size not in GROUP_SIZES:
        raise UsageError(
            f"broker_ref runs groups of {', '.join(map(str, GROUP_SIZES))} nodes, not {size}"
        )
    settings = cluster.settings
    unknown = sorted(
        n for n in (*settings.priority, *settings.designated_primary) if n not in cluster.names
    )
    if unknown:
        raise UsageError(f"group settings name unknown nodes: {', '.join(unknown)}")
    if settings.designated_primary and size != 2:
        raise UsageError("designated primary applies only to a group of two nodes (the seeds)")
    if settings.is_active_passive and settings.active_passive.self_activated:
        raise UsageError(
            "broker_ref's active-passive brokers never activate themselves: its cluster needs "
            "the lab's cluster manager (group.active_passive.activation manager)"
        )
    if settings.target_context.get("broker_ref"):
        raise UsageError(
            "group.target_context.broker_ref: broker_ref takes no settings of its own; "
            "its nodes are configured by the group settings' fields"
        )
    if len(settings.designated_primary) > 1:
        raise UsageError("designating both nodes primary is refused at start-up (the seeds)")
    if any(not 0 <= p <= 3 for p in settings.priority.values()):
        raise UsageError("priority is 0..3 (Never, Normal, High, Highest)")
    if not 0 <= settings.quorum_override <= size:
        raise UsageError(f"quorum override is 0..{size} for a group of {size}")


class BrokerRefTarget(RestManagement):
    """The lab's reference broker as a target: a `Target` to build on (the example's
    `ExampleBroker` subclasses `RestManagement` and calls `broker_ref_config`) or delegate to.

    Parameters:
        group_secret: the nodes of a run's group share a secret they prove to each other
            before replicating (on by default).
        replication_tls: the replication links use TLS (implies the group secret).
    """

    name = "broker_ref"
    ready_timeout_s = 30.0
    restart_allowance_s = 0.0
    election_allowance_s = 0.0
    proxied_peer_links = True
    founded_by_first_node = False  # a lone node is no majority: the group elects together
    data_disk_mb = 64

    def __init__(self, group_secret: bool = True, replication_tls: bool = False) -> None:
        self.group_secret = group_secret or replication_tls
        self.replication_tls = replication_tls

    def security(self, node: NodePlan) -> dict[str, Any]:
        """The run's group secret, and TLS files when asked for, for `node`'s configuration
        (kept in the run's nodes folder)."""
        nodes_dir = node.node_dir.parent
        out: dict[str, Any] = {}
        if self.group_secret:
            out["group_secret"] = group_secret(nodes_dir)
        if self.replication_tls:
            out["replication_tls"] = True
            out.update(tls_files(nodes_dir, node.name).config())
        return out

    def prepare(self) -> None:
        """Nothing to fetch: broker_ref is part of the lab."""

    def check(self, cluster: ClusterPlan) -> None:
        check_plan(cluster)

    def command(self, cluster: ClusterPlan, node: NodePlan) -> list[str]:
        check_plan(cluster)
        config = node_config(cluster, node, self.credentials, security=self.security(node))
        path = node.node_dir / "config.json"
        write_private(path, (json.dumps(config, indent=2) + "\n").encode())
        return [sys.executable, "-m", "broker_ref", "--config", str(path)]

    def container_launch(
        self, cluster: ClusterPlan, node: NodePlan, address_of: dict[str, str]
    ) -> ContainerLaunch:
        """Listens on every interface of its container; reaches its peers through the
        proxies of `cluster.peer_addresses` (so `address_of` is not needed)."""
        check_plan(cluster)
        if self.replication_tls:
            raise UsageError("broker_ref's replication TLS runs on the process backend only")
        config = node_config(
            cluster, node, self.credentials, host="0.0.0.0", security=self.security(node)
        )
        text = json.dumps(config, indent=2) + "\n"
        write_private(node.node_dir / "config.json", text.encode())
        return ContainerLaunch(
            config=text.encode(),
            config_path=CONTAINER_CONFIG,
            command=("python3", "-m", "broker_ref", "--config", CONTAINER_CONFIG),
        )

    def host_shipment(self) -> dict[str, Path]:
        """broker_ref and its Python packages (lab.targets.python_shipment)."""
        return {"pylib": python_shipment()}

    def host_needs(self) -> tuple[str, ...]:
        return ("python",)

    def host_services(self, settings: GroupSettings) -> tuple[LabService, ...]:
        return ()  # its nodes need nothing beside them

    def host_launch(
        self, cluster: ClusterPlan, node: NodePlan, address_of: dict[str, str], place: HostPlace
    ) -> HostLaunch:
        """On every interface of its host; its peers at the addresses of
        `cluster.peer_addresses` (their hosts, directly)."""
        check_plan(cluster)
        if self.replication_tls:
            raise UsageError("broker_ref's replication TLS runs on the process backend only")
        config = node_config(
            cluster, node, self.credentials, host="0.0.0.0", security=self.security(node)
        )
        text = json.dumps(config, indent=2) + "\n"
        write_private(node.node_dir / "config.json", text.encode())
        path = f"{place.node_dir(node.name)}/config.json"
        return HostLaunch(
            config=text.encode(),
            config_path=path,
            command=(place.python, "-m", "broker_ref", "--config", path),
            env=(("PYTHONPATH", place.shipped("pylib")),),
        )

    def parse_log_line(self, line: str) -> LogRecord | None:
        return parse_oplog_line(line)

    def service_timings(self, group: GroupSettings, nodes: int) -> dict[str, Timing]:
        """Its group's timeouts (lab.judge.bounds.broker_ref_timings)."""
        return broker_ref_timings(group, nodes)
