"""A RabbitMQ node's files and environment, as the lab writes them (what `rabbitmq-server`
reads at start):

    rabbitmq.conf       listeners (AMQP 0-9-1 and 1.0 on one port, the management API),
                        one console log line per event (`<time> <LEVEL> [<node>] <text>`),
                        the partition handling, peer discovery (classic config: every node but
                        the founder joins the founder at its first start)
    advanced.config     Erlang's net_ticktime (how soon a silent peer is down) and, on local
                        processes, the address the node's distribution listens on
    enabled_plugins     rabbitmq_amqp1_0 (the lab's clients) and rabbitmq_management
    .erlang.cookie      the run's cookie, in the node's HOME (every node and rabbitmqctl)

A node is named `<node>@<host>` with long names: on local processes its host is the address
its distribution listens on (its own loopback address as root, lab.backends.process.peer_filter,
so a packet filter can cut a pair), in a container its address on the run's network.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.targets.rabbitmq.settings import RabbitSettings

__all__ = [
    "COOKIE",
    "ENABLED_PLUGINS",
    "NodeConfig",
    "advanced_config",
    "erlang_name",
    "rabbitmq_conf",
    "vm_args",
]

COOKIE = "lab-rabbitmq-cookie"  # nodes of one run, and only the lab, reach each other
ENABLED_PLUGINS = "[rabbitmq_amqp1_0,rabbitmq_management].\n"
# Peer discovery waits this long for the founder at a node's first start (0.5 s a retry).
DISCOVERY_RETRIES = 600


def erlang_name(node: str, host: str) -> str:
    return f"{node}@{host}"


@dataclass(frozen=True)
class NodeConfig:
    """What one node's rabbitmq.conf says."""

    node: str
    amqp: str  # ip:port of the AMQP listener
    management_ip: str
    management_port: int
    founder: str | None  # the Erlang name of the node to join at the first start; None: founds
    management_user: str
    management_password: str
    disk_free_limit_mb: int = 16


def rabbitmq_conf(config: NodeConfig, settings: RabbitSettings) -> str:
    lines = [
        f"listeners.tcp.default = {config.amqp}",
        f"management.tcp.ip = {config.management_ip}",
        f"management.tcp.port = {config.management_port}",
        "management.rates_mode = none",
        f"default_user = {config.management_user}",
        f"default_pass = {config.management_password}",
        "loopback_users = none",
        # Clients speak AMQP 1.0 without SASL credentials: they connect as this user.
        f"amqp1_0.default_user = {config.management_user}",
        f"disk_free_limit.absolute = {config.disk_free_limit_mb}MB",
        # Quorum queues' write-ahead log rolls over at 64 MB (512 MB by default): a node's
        # data disk in a container is a 256 MB tmpfs.
        "raft.wal_max_size_bytes = 64000000",
        "log.file = false",
        "log.console = true",
        "log.console.level = info",
        "log.console.use_colors = off",
        "log.console.formatter.single_line = on",
        "log.console.formatter.time_format = rfc3339_T",
        "log.console.formatter.level_format = uc",
        f"log.console.formatter.plaintext.format = $time $level [{config.node}] $msg",
        f"cluster_partition_handling = {settings.partition_handling}",
        "cluster_formation.peer_discovery_backend = classic_config",
        f"cluster_formation.discovery_retry_limit = {DISCOVERY_RETRIES}",
        "cluster_formation.discovery_retry_interval = 500",
    ]
    if config.founder is not None:
        lines.append(f"cluster_formation.classic_config.nodes.1 = {config.founder}")
    return "\n".join(lines) + "\n"


def _erlang_ip(address: str) -> str:
    return "{" + ",".join(address.split(".")) + "}"


def advanced_config(settings: RabbitSettings, dist_interface: str | None) -> str:
    """Erlang's kernel settings; `dist_interface`: the IPv4 address the node's distribution
    listens on (None: every interface, as in a container)."""
    kernel = [f"{{net_ticktime, {settings.net_ticktime_s}}}"]
    if dist_interface is not None:
        kernel.append(f"{{inet_dist_use_interface, {_erlang_ip(dist_interface)}}}")
    return f"[{{kernel, [{', '.join(kernel)}]}}].\n"


def vm_args(own_epmd: bool) -> str:
    """The Erlang VM's flags: one scheduler that sleeps when idle (nodes share two cores with
    the lab and each other), and no port mapper of its own when the lab runs one for the
    run (`own_epmd` False)."""
    flags = "+S 1:1 +sbwt none +sbwtdcpu none +sbwtdio none"
    return flags if own_epmd else f"{flags} -start_epmd false"
