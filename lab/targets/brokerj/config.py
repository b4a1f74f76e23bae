"""A Broker-J node's initial configuration: one BDB_HA virtual host node per broker.

Broker-J reads the file once, on the first start of an empty work folder, and keeps
its configuration in `<work>/config.json` afterwards, so a restart after kill -9 is
the same command on the same folder.

    ports           AMQP 1.0 (anonymous SASL, the clients' own mechanism) and HTTP
                    management with basic authentication switched on (it is off on
                    plain HTTP by default)
    brokerloggers   a console logger: operational messages (qpid.message.*) and warnings,
                    one line each, `<time> <LEVEL> [<node>] [<subject>]… <CODE> : <text>`
    virtualhostnode BDB_HA: group, own address, helper (the first node), permitted nodes
                    (every node planned, spares included: a spare started later joins
                    through the helper), priority, designatedPrimary, quorumOverride; the
                    group's timings as JE parameters in its context (`je_timings`), with
                    the group settings' `target_context` for this target last
    virtualhost     BDB_HA: local/remote transaction sync policies (`sync_policies`), and
                    queues created on first use (durable)

Broker-J 9.x fixes the replica acknowledgement policy at SIMPLE_MAJORITY
(ReplicatedEnvironmentFacade); `check_durability` refuses any other.

Coalescing-sync is no attribute of its own in 9.x: the virtual host reports it
(`coalescingSync`, read-only) exactly when its local policy is SYNC, which Broker-J then
carries out as the 0.18 guide's coalescing-sync does: each commit is handed to JE without
a sync, and one thread writes and syncs JE's log once for all the commits waiting, before
any of them is answered. So the documents' "NO_SYNC (or WRITE_NO_SYNC) on the master with
coalescing-sync" is local policy SYNC on 9.x; a master policy without coalescing-sync is
given as it is, and SYNC without it also switches Broker-J's coalescing committer off
(`qpid.bdb.ha.disable_coalescing_committer`), so that JE syncs every commit itself.
"""

from __future__ import annotations

import json
from typing import Any

from lab.ground.errors import UsageError
from lab.ground.nodes import ClusterPlan, NodePlan
from lab.ground.spec import Durability, GroupSettings
from lab.judge.bounds import Timing
from lab.targets.management import Credentials

__all__ = [
    "ACK_POLICY",
    "LOG_PATTERN",
    "check_durability",
    "check_group",
    "initial_config",
    "je_service_timings",
    "je_timings",
    "sync_policies",
]

TARGET = "qpid-broker-j"  # its name in a group's target_context
NO_COALESCING_COMMITTER = "qpid.bdb.ha.disable_coalescing_committer"
ACK_POLICY = "SIMPLE_MAJORITY"
LOG_PATTERN = "%date{yyyy-MM-dd'T'HH:mm:ss.SSS} %level [{node}] %msg%n"
MODEL_VERSION = "9.0"
STALL_FACTOR = 3  # as broker_ref's group (broker_ref/group.py)
JE_MIN_TIMEOUT_S = 2.0
JE_PRIMARY_RETRIES = 2  # je.rep.electionsPrimaryRetries, JE's default
_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}


def check_durability(durability: Durability) -> None:
    if durability.ack_policy != ACK_POLICY:
        raise UsageError(
            f"durability {durability.triplet}: Broker-J fixes the replica acknowledgement "
            f"policy at {ACK_POLICY} (its BDB_HA virtual host takes only the two sync "
            "policies)"
        )


def check_group(cluster: ClusterPlan) -> None:
    settings = cluster.settings
    if settings.is_active_passive:
        raise UsageError(
            "Apache Qpid Broker-J has no active-passive mode (that is the C++ broker's HA "
            "design); run active-passive scenarios with --target broker_ref"
        )
    unknown = sorted(
        n for n in (*settings.priority, *settings.designated_primary) if n not in cluster.names
    )
    if unknown:
        raise UsageError(f"group settings name unknown nodes: {', '.join(unknown)}")
    if settings.designated_primary and len(cluster.nodes) != 2:
        raise UsageError("designated primary applies only to a group of two nodes (the seeds)")
    check_durability(cluster.durability)


def sync_policies(durability: Durability) -> tuple[str, str, dict[str, str]]:
    """The virtual host's local and remote transaction sync policies for `durability`, and
    the node context that goes with them (see the module's note on coalescing-sync)."""
    if durability.coalescing_sync:
        return "SYNC", durability.replica_sync, {}
    context = {NO_COALESCING_COMMITTER: "true"} if durability.master_sync == "SYNC" else {}
    return durability.master_sync, durability.replica_sync, context


def _duration(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))} ms"


def je_timings(settings: GroupSettings) -> dict[str, str]:
    """The group's timings as Berkeley DB JE parameters (context variables of the node).

    A node stops trusting a silent peer after STALL_FACTOR election timeouts in broker_ref;
    JE's replicaTimeout (a replica's wait on a silent master) and feederTimeout (a master's
    wait on a silent replica) play that part, with JE's floor of 2 s (Broker-J's default
    is 30 s). An election round waits for every peer's answer to its first phase, a silent
    one (a stopped container's address) until JE's open timeout: the elections' open and
    read timeouts get the same wait (JE's default is 10 s each). JE's heartbeat is 1 s,
    its minimum."""
    silence = _duration(max(JE_MIN_TIMEOUT_S, STALL_FACTOR * settings.election_timeout_s))
    return {
        "je.rep.insufficientReplicasTimeout": _duration(settings.insufficient_replicas_timeout_s),
        "je.rep.repStreamTimeout": _duration(settings.rep_stream_timeout_s),
        "je.rep.replicaTimeout": silence,
        "je.rep.feederTimeout": silence,
        "je.rep.electionsOpenTimeout": silence,
        "je.rep.electionsReadTimeout": silence,
    }


def _je_seconds(text: str) -> float:
    """A JE duration (`500 ms`, `10 s`, `2 min`; a bare number is milliseconds) in seconds."""
    number, _, unit = text.strip().partition(" ")
    return float(number) * _UNITS.get(unit.strip().lower() or "ms", 1e-3)


def je_service_timings(settings: GroupSettings, nodes: int) -> dict[str, Timing]:
    """How long the group's waits are (lab.judge.bounds), from the JE parameters a node is
    given (the group's timings, then the scenario's own context): the wait on a silent
    master; an election, two rounds (the one under way and the one that elects), each as
    long as a silent peer's open timeout; a designated primary's, which JE makes master
    alone only after the round under way and `electionsPrimaryRetries` more have failed."""
    context = {**je_timings(settings), **settings.target_context.get(TARGET, {})}
    silence = _je_seconds(context["je.rep.replicaTimeout"])
    opening = _je_seconds(context["je.rep.electionsOpenTimeout"])
    retries = int(context.get("je.rep.electionsPrimaryRetries", JE_PRIMARY_RETRIES))
    return {
        "silence": Timing(silence, "je.rep.replicaTimeout"),
        "election": Timing(2 * opening, "2 rounds × je.rep.electionsOpenTimeout"),
        "primary": Timing(
            (2 + retries) * opening,
            f"{2 + retries} rounds × je.rep.electionsOpenTimeout "
            f"(je.rep.electionsPrimaryRetries {retries})",
        ),
    }


def initial_config(
    cluster: ClusterPlan,
    node: NodePlan,
    credentials: Credentials,
    *,
    bind_host: str,
    address_of: dict[str, str],
) -> dict[str, Any]:
    """The node's initial configuration; `address_of` maps each node to the host:port the
    others reach its replication service at (what it advertises to the group)."""
    settings = cluster.settings
    local, remote, sync_context = sync_policies(cluster.durability)
    helper = cluster.nodes[0].name
    virtualhost = {
        "type": "BDB_HA",
        "localTransactionSynchronizationPolicy": local,
        "remoteTransactionSynchronizationPolicy": remote,
        "nodeAutoCreationPolicies": [
            {
                "pattern": ".*",
                "nodeType": "Queue",
                "createdOnPublish": True,
                "createdOnConsume": True,
                "attributes": {"durable": True},
            }
        ],
    }
    # Clients open connections with the address they dialled (127.0.0.1 and a proxy port),
    # which a container does not know as its own: every host name means this node's host.
    aliases = [
        {"name": "nameAlias", "type": "nameAlias"},
        {
            "name": "anyHostAlias",
            "type": "patternMatchingAlias",
            "pattern": ".*",
            "virtualHostNode": node.name,
        },
    ]
    return {
        "name": node.name,
        "modelVersion": MODEL_VERSION,
        "authenticationproviders": [
            {
                "name": "management",
                "type": "Plain",
                "users": [
                    {"name": credentials.user, "type": "managed", "password": credentials.password}
                ],
            },
            {"name": "clients", "type": "Anonymous"},
        ],
        "brokerloggers": [
            {
                "name": "console",
                "type": "Console",
                "layout": LOG_PATTERN.replace("{node}", node.name),
                "brokerloginclusionrules": [
                    {
                        "name": "Operational",
                        "type": "NameAndLevel",
                        "level": "INFO",
                        "loggerName": "qpid.message.*",
                    },
                    {"name": "Root", "type": "NameAndLevel", "level": "WARN", "loggerName": "ROOT"},
                ],
            }
        ],
        "ports": [
            {
                "name": "AMQP",
                "port": node.amqp_port,
                "bindingAddress": bind_host,
                "authenticationProvider": "clients",
                "protocols": ["AMQP_1_0"],
                "virtualhostaliases": aliases,
            },
            {
                "name": "HTTP",
                "port": node.management_port,
                "bindingAddress": bind_host,
                "authenticationProvider": "management",
                "protocols": ["HTTP"],
            },
        ],
        "virtualhostnodes": [
            {
                "name": node.name,
                "type": "BDB_HA",
                "defaultVirtualHostNode": True,
                "groupName": cluster.group,
                "address": address_of[node.name],
                "helperAddress": address_of[helper],
                "helperNodeName": helper,
                "permittedNodes": [address_of[n] for n in cluster.names],
                "priority": settings.priority_of(node.name),
                "designatedPrimary": node.name in settings.designated_primary,
                "quorumOverride": settings.quorum_override,
                "storePath": str(node.data_dir / "store"),
                # a scenario's own settings last: what the situation needs wins
                "context": {
                    **je_timings(settings),
                    **sync_context,
                    **settings.target_context.get(TARGET, {}),
                },
                "virtualHostInitialConfiguration": json.dumps(virtualhost),
            }
        ],
        "plugins": [
            {
                "type": "MANAGEMENT-HTTP",
                "name": "httpManagement",
                "httpBasicAuthenticationEnabled": True,
            }
        ],
    }
