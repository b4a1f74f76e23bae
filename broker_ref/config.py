"""A node's configuration: one JSON object, parsed once at the entry point.

    {"name": "n1", "group": "lab", "host": "127.0.0.1", "amqp_port": 5672,
     "management_port": 8080, "data_dir": "/path/to/node/data",
     "coalescing_sync": true, "idle_timeout_s": 2.0,
     "replication_port": 7001, "peers": {"n2": "127.0.0.1:7102", "n3": "127.0.0.1:7103"},
     "permitted_nodes": ["n1", "n2", "n3"], "members": ["n1", "n2", "n3"],
     "priority": 1, "designated_primary": false,
     "quorum_override": 0, "durability": "NO_SYNC,NO_SYNC,SIMPLE_MAJORITY",
     "heartbeat_interval_s": 0.1, "election_timeout_s": 0.6,
     "insufficient_replicas_timeout_s": 5.0, "rep_stream_timeout_s": 3600,
     "management_user": "admin", "management_password": "admin",
     "mode": "replicated-group", "ha_replicate": "none", "ha_backup_timeout_s": 10,
     "link_heartbeat_interval_s": 120, "link_maintenance_interval_s": 2,
     "ha_auth": false, "ha_username": "", "ha_password": "", "ha_mechanism": "ANONYMOUS",
     "group_secret": "", "replication_tls": false, "management_tls": false,
     "tls_cert_file": "", "tls_key_file": "", "tls_ca_file": ""}

`name`, `amqp_port`, `management_port` and `data_dir` are required; the others
take the defaults shown (no peers: a group of one). `peers` says how this node
reaches each other node of its group (an address that may be a proxy);
`replication_port` is where it listens for them. `members` (default: this node and every
peer) are the nodes the group starts with; a peer left out may be added later, and a node
left out of its own list starts as a newcomer that asks the master to admit it
(membership.py). An unknown key is an error
naming the key. A relative `data_dir` is taken relative to the config file's
folder. Rules from the seeds: priority is 0..3 (Never, Normal, High, Highest);
quorum_override is 0 (the default: a majority) up to the group's size;
designated_primary applies only to a group of two; master sync SYNC cannot be
combined with coalescing-sync.

`mode` chooses how the group decides its master: "replicated-group" (the Java broker's:
nodes elect one) or "active-passive" (the C++ broker's: brokers never elect themselves, a
cluster manager promotes one; active_passive.py). The `ha_*` and `link_*` keys are the C++
broker's HA options: `ha_replicate` (none, configuration, all) is how queues not declared
with their own `qpid.replicate` are replicated; `ha_backup_timeout_s`; a backup is dead to
its primary after twice `link_heartbeat_interval_s` of silence; a backup looks for its
primary every `link_maintenance_interval_s`. With `ha_auth` on, a node accepts a peer only
with the group's `ha_username` / `ha_password` (mechanism PLAIN; ANONYMOUS is refused); the
same keys are what this node presents to its peers.

The AMQP port's limits (connection_guard.py): at most `max_connections` client connections
(default 1000; more are refused with amqp:resource-limit-exceeded), and each must send its
AMQP `open` within `handshake_timeout_s` (default 10) of connecting or be closed.

`group_secret` (16 characters or more; empty: none) makes every peer prove it knows the
group's secret before anything it sends is read (peer_auth.py; the secret never crosses
the wire). `replication_tls` puts the peer connections under TLS with mutual verification
against `tls_ca_file` (each node presents `tls_cert_file` / `tls_key_file`, issued to its
name); `management_tls` serves the management API over HTTPS with the same certificate.
Relative file names are taken relative to the config file's folder, as `data_dir` is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker_ref.durability import Durability, SyncPolicy, parse_durability
from broker_ref.errors import ConfigError
from broker_ref.security_config import parse_security

__all__ = [
    "ACTIVE_PASSIVE",
    "MODES",
    "REPLICATE_LEVELS",
    "NodeConfig",
    "load_config",
    "parse_config",
]

ACTIVE_PASSIVE = "active-passive"
MODES = ("replicated-group", ACTIVE_PASSIVE)
REPLICATE_LEVELS = ("none", "configuration", "all")
MECHANISMS = ("ANONYMOUS", "PLAIN")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class NodeConfig:
    """Everything one node needs to know to start."""

    name: str
    amqp_port: int
    management_port: int
    data_dir: Path
    group: str = "lab"
    host: str = "127.0.0.1"
    coalescing_sync: bool = True
    idle_timeout_s: float = 2.0
    replication_port: int | None = None
    peers: tuple[tuple[str, str], ...] = ()  # (node name, "host:port") for every other node
    permitted_nodes: tuple[str, ...] = ()
    members: tuple[str, ...] = ()  # the group's first members; empty: every node
    priority: int = 1
    designated_primary: bool = False
    quorum_override: int = 0
    durability: Durability = field(default_factory=Durability)
    heartbeat_interval_s: float = 0.1
    election_timeout_s: float = 0.6
    insufficient_replicas_timeout_s: float = 5.0
    rep_stream_timeout_s: float = 3600.0
    management_user: str = "admin"
    management_password: str = "admin"
    mode: str = "replicated-group"
    ha_replicate: str = "none"
    ha_backup_timeout_s: float = 10.0
    link_heartbeat_interval_s: float = 120.0
    link_maintenance_interval_s: float = 2.0
    ha_auth: bool = False
    ha_username: str = ""
    ha_password: str = ""
    ha_mechanism: str = "ANONYMOUS"
    max_connections: int = 1000
    handshake_timeout_s: float = 10.0
    group_secret: str = ""
    replication_tls: bool = False
    management_tls: bool = False
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_ca_file: str = ""

    @property
    def active_passive(self) -> bool:
        return self.mode == ACTIVE_PASSIVE

    @property
    def group_size(self) -> int:
        return 1 + len(self.peers)

    @property
    def peer_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.peers)


_REQUIRED = ("name", "amqp_port", "management_port", "data_dir")
_OPTIONAL = (
    "group",
    "host",
    "coalescing_sync",
    "idle_timeout_s",
    "replication_port",
    "peers",
    "permitted_nodes",
    "members",
    "priority",
    "designated_primary",
    "quorum_override",
    "durability",
    "heartbeat_interval_s",
    "election_timeout_s",
    "insufficient_replicas_timeout_s",
    "rep_stream_timeout_s",
    "management_user",
    "management_password",
    "mode",
    "ha_replicate",
    "ha_backup_timeout_s",
    "link_heartbeat_interval_s",
    "link_maintenance_interval_s",
    "ha_auth",
    "ha_username",
    "ha_password",
    "ha_mechanism",
    "max_connections",
    "handshake_timeout_s",
    "group_secret",
    "replication_tls",
    "management_tls",
    "tls_cert_file",
    "tls_key_file",
    "tls_ca_file",
)


def load_config(path: Path) -> NodeConfig:
    """Read and check the config file at `path`; raise ConfigError naming what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"config {path}: cannot read: {exc.strerror or exc}") from exc
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"config {path}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    try:
        return parse_config(raw, base_dir=path.parent)
    except ConfigError as exc:
        raise ConfigError(f"config {path}: {exc}") from exc


def parse_config(raw: Any, base_dir: Path | None = None) -> NodeConfig:
    """Check a decoded JSON value and turn it into a NodeConfig."""
    if not isinstance(raw, dict):
        raise ConfigError(f"must be a JSON object, got {_json_type(raw)}")
    for key in raw:
        if key not in _REQUIRED and key not in _OPTIONAL:
            raise ConfigError(f"unknown key {key!r}")
    for key in _REQUIRED:
        if key not in raw:
            raise ConfigError(f"missing required key {key!r}")
    defaults = NodeConfig(name="x", amqp_port=1, management_port=1, data_dir=Path("."))
    name = _name(raw, "name")
    group = _name(raw, "group") if "group" in raw else defaults.group
    host = _text(raw, "host") if "host" in raw else defaults.host
    amqp_port = _port(raw, "amqp_port")
    management_port = _port(raw, "management_port")
    if amqp_port == management_port:
        raise ConfigError(f"'amqp_port' and 'management_port' are both {amqp_port}")
    data_dir = Path(_text(raw, "data_dir"))
    if not data_dir.is_absolute() and base_dir is not None:
        data_dir = base_dir / data_dir
    coalescing = raw.get("coalescing_sync", defaults.coalescing_sync)
    if not isinstance(coalescing, bool):
        raise ConfigError(f"'coalescing_sync' must be true or false, got {_json_type(coalescing)}")
    idle = _seconds(raw, "idle_timeout_s", defaults.idle_timeout_s, 0, 3600)
    peers = _peers(raw, name)
    replication_port = _port(raw, "replication_port") if "replication_port" in raw else None
    if peers and replication_port is None:
        raise ConfigError("'replication_port' is required when the node has peers")
    if replication_port is not None and replication_port in (amqp_port, management_port):
        raise ConfigError(f"'replication_port' {replication_port} is already another port")
    group_names = (name, *(p for p, _ in peers))
    permitted = _permitted(raw, group_names)
    members = _members(raw, group_names)
    priority = _int(raw, "priority", defaults.priority, 0, 3)
    size = len(group_names)
    quorum_override = _int(raw, "quorum_override", defaults.quorum_override, 0, size)
    designated = _bool(raw, "designated_primary", defaults.designated_primary)
    if designated and size != 2:
        raise ConfigError(
            f"'designated_primary' applies only to a group of two nodes (this group has {size})"
        )
    try:
        durability = parse_durability(str(raw.get("durability", str(defaults.durability))))
    except ValueError as exc:
        raise ConfigError(f"'durability': {exc}") from None
    if durability.master_sync is SyncPolicy.SYNC and coalescing:
        raise ConfigError("master sync policy SYNC cannot be combined with coalescing_sync true")
    return NodeConfig(
        name=name,
        amqp_port=amqp_port,
        management_port=management_port,
        data_dir=data_dir,
        group=group,
        host=host,
        coalescing_sync=coalescing,
        idle_timeout_s=idle,
        replication_port=replication_port,
        peers=peers,
        permitted_nodes=permitted,
        members=members,
        priority=priority,
        designated_primary=designated,
        quorum_override=quorum_override,
        durability=durability,
        heartbeat_interval_s=_seconds(raw, "heartbeat_interval_s", 0.1, 0.01, 10),
        election_timeout_s=_seconds(raw, "election_timeout_s", 0.6, 0.05, 60),
        insufficient_replicas_timeout_s=_seconds(
            raw, "insufficient_replicas_timeout_s", 5.0, 0.1, 3600
        ),
        rep_stream_timeout_s=_seconds(raw, "rep_stream_timeout_s", 3600.0, 0.1, 7 * 86400),
        management_user=_text(raw, "management_user") if "management_user" in raw else "admin",
        management_password=(
            _text(raw, "management_password") if "management_password" in raw else "admin"
        ),
        mode=_choice(raw, "mode", MODES),
        ha_replicate=_choice(raw, "ha_replicate", REPLICATE_LEVELS, default="none"),
        ha_backup_timeout_s=_seconds(raw, "ha_backup_timeout_s", 10.0, 0.0, 3600),
        link_heartbeat_interval_s=_seconds(raw, "link_heartbeat_interval_s", 120.0, 0.05, 3600),
        link_maintenance_interval_s=_seconds(raw, "link_maintenance_interval_s", 2.0, 0.01, 60),
        ha_auth=_bool(raw, "ha_auth", False),
        ha_username=_plain(raw, "ha_username"),
        ha_password=_plain(raw, "ha_password"),
        ha_mechanism=_choice(raw, "ha_mechanism", MECHANISMS, default="ANONYMOUS"),
        max_connections=_int(raw, "max_connections", 1000, 1, 100_000),
        handshake_timeout_s=_seconds(raw, "handshake_timeout_s", 10.0, 0.1, 3600),
        **parse_security(raw, base_dir),
    )


def _choice(
    raw: dict[str, Any], key: str, choices: tuple[str, ...], default: str | None = None
) -> str:
    value = raw.get(key, default if default is not None else choices[0])
    if value not in choices:
        raise ConfigError(f"{key!r} must be one of {', '.join(choices)}, got {value!r}")
    return str(value)


def _plain(raw: dict[str, Any], key: str) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise ConfigError(f"{key!r} must be a string, got {_json_type(value)}")
    return value


def _seconds(raw: dict[str, Any], key: str, default: float, low: float, high: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ConfigError(f"{key!r} must be a number of seconds in {low}..{high}, got {value!r}")
    return float(value)


def _int(raw: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{key!r} must be an integer in {low}..{high}, got {value!r}")
    return value


def _bool(raw: dict[str, Any], key: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{key!r} must be true or false, got {_json_type(value)}")
    return value


def _peers(raw: dict[str, Any], name: str) -> tuple[tuple[str, str], ...]:
    value = raw.get("peers", {})
    if not isinstance(value, dict):
        raise ConfigError(f"'peers' must be an object of node name to host:port, got {value!r}")
    peers = []
    for peer, address in sorted(value.items()):
        if not isinstance(peer, str) or not _NAME.match(peer) or peer == name:
            raise ConfigError(f"'peers' has a bad node name {peer!r}")
        if not isinstance(address, str) or not re.match(r"^[^:\s]+:\d{1,5}$", address):
            raise ConfigError(f"'peers' address of {peer!r} must be host:port, got {address!r}")
        peers.append((peer, address))
    if len(peers) + 1 not in (1, 2, 3, 5):
        raise ConfigError(f"a group has 1, 2, 3 or 5 nodes, not {len(peers) + 1}")
    return tuple(peers)


def _permitted(raw: dict[str, Any], group_names: tuple[str, ...]) -> tuple[str, ...]:
    value = raw.get("permitted_nodes", list(group_names))
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError("'permitted_nodes' must be a list of node names")
    missing = [n for n in group_names if n not in value]
    if missing:
        raise ConfigError(f"'permitted_nodes' must include every node of the group: {missing}")
    return tuple(value)


def _members(raw: dict[str, Any], group_names: tuple[str, ...]) -> tuple[str, ...]:
    if "members" not in raw:
        return ()  # every node
    value = raw["members"]
    if not isinstance(value, list) or not value or not all(v in group_names for v in value):
        raise ConfigError(f"'members' must be a non-empty list of {', '.join(group_names)}")
    if len(set(value)) != len(value):
        raise ConfigError("'members' names a node twice")
    return tuple(sorted(value))


def _text(raw: dict[str, Any], key: str) -> str:
    value = raw[key]
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key!r} must be a non-empty string, got {_json_type(value)}")
    return value


def _name(raw: dict[str, Any], key: str) -> str:
    value = _text(raw, key)
    if not _NAME.match(value):
        raise ConfigError(
            f"{key!r} must be 1-64 letters, digits, '.', '_' or '-' (no spaces), got {value!r}"
        )
    return value


def _port(raw: dict[str, Any], key: str) -> int:
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ConfigError(f"{key!r} must be a port number in 1..65535, got {value!r}")
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
