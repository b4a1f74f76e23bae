"""The security keys of a node's configuration: the group secret and the TLS switches and
files (config.py has the full list and what each key means)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker_ref.errors import ConfigError

__all__ = ["MIN_SECRET", "TLS_FILES", "parse_security"]

MIN_SECRET = 16
TLS_FILES = ("tls_cert_file", "tls_key_file", "tls_ca_file")


def parse_security(raw: dict[str, Any], base_dir: Path | None) -> dict[str, Any]:
    """`group_secret`, `replication_tls`, `management_tls` and the TLS files, checked: a
    switch on needs all three files, and they must exist."""
    secret = raw.get("group_secret", "")
    if not isinstance(secret, str):
        raise ConfigError("'group_secret' must be a string")
    if secret and len(secret) < MIN_SECRET:
        raise ConfigError(
            f"'group_secret' must be {MIN_SECRET} characters or more, got {len(secret)}"
        )
    out: dict[str, Any] = {"group_secret": secret}
    for key in ("replication_tls", "management_tls"):
        value = raw.get(key, False)
        if not isinstance(value, bool):
            raise ConfigError(f"{key!r} must be true or false")
        out[key] = value
    tls = out["replication_tls"] or out["management_tls"]
    for key in TLS_FILES:
        value = raw.get(key, "")
        if not isinstance(value, str):
            raise ConfigError(f"{key!r} must be a string")
        if not value:
            if tls:
                raise ConfigError(
                    f"{key!r} is required when replication_tls or management_tls is on"
                )
            out[key] = ""
            continue
        path = Path(value)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if tls and not path.is_file():
            raise ConfigError(f"{key!r}: no such file {str(path)!r}")
        out[key] = str(path)
    return out
