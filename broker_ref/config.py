"""A node's configuration: one JSON object, parsed once at the entry point.

    {"name": "n1", "group": "lab", "host": "127.0.0.1", "amqp_port": 5672,
     "management_port": 8080, "data_dir": "/path/to/node/data",
     "coalescing_sync": true, "idle_timeout_s": 2.0}

`name`, `amqp_port`, `management_port` and `data_dir` are required; the others
take the defaults shown. An unknown key is an error naming the key. A relative
`data_dir` is taken relative to the config file's folder.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker_ref.errors import ConfigError

__all__ = ["NodeConfig", "load_config", "parse_config"]

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


_REQUIRED = ("name", "amqp_port", "management_port", "data_dir")
_OPTIONAL = ("group", "host", "coalescing_sync", "idle_timeout_s")


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
    idle = raw.get("idle_timeout_s", defaults.idle_timeout_s)
    if isinstance(idle, bool) or not isinstance(idle, int | float) or not 0 <= idle <= 3600:
        raise ConfigError(f"'idle_timeout_s' must be a number of seconds in 0..3600, got {idle!r}")
    return NodeConfig(
        name=name,
        amqp_port=amqp_port,
        management_port=management_port,
        data_dir=data_dir,
        group=group,
        host=host,
        coalescing_sync=coalescing,
        idle_timeout_s=float(idle),
    )


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
