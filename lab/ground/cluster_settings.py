"""The settings of an active-passive cluster (the C++ broker's HA options, by its names) and of
its cluster manager, as values of the run spec (`group.active_passive` in spec.json)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from lab.ground.errors import UsageError

__all__ = [
    "ACTIVATIONS",
    "ACTIVE_PASSIVE",
    "MANAGER_ACTIVATED",
    "MODES",
    "REPLICATED_GROUP",
    "REPLICATE_LEVELS",
    "SELF_ACTIVATED",
    "ActivePassiveSettings",
    "Mode",
]

Mode = Literal["replicated-group", "active-passive"]
REPLICATED_GROUP: Mode = "replicated-group"
ACTIVE_PASSIVE: Mode = "active-passive"
MODES: tuple[Mode, ...] = (REPLICATED_GROUP, ACTIVE_PASSIVE)
REPLICATE_LEVELS = ("none", "configuration", "all")
# Who makes a broker the primary: the lab's cluster manager (the C++ broker's design), or the
# brokers themselves (a target like Artemis: a lock manager or a quorum vote; the lab watches).
MANAGER_ACTIVATED = "manager"
SELF_ACTIVATED = "self"
ACTIVATIONS = (MANAGER_ACTIVATED, SELF_ACTIVATED)


@dataclass(frozen=True)
class ActivePassiveSettings:
    """`ha_replicate` is how queues without their own `qpid.replicate` are replicated (the
    seed's default is none; the lab's scenarios set all). A recovering primary waits
    `ha_backup_timeout_s` for the backups of the old one; a backup is dead to its primary
    after twice `link_heartbeat_interval_s`, and looks for its primary every
    `link_maintenance_interval_s`. With `ha_auth` the brokers authenticate each other with
    `ha_username` / `ha_password` (PLAIN); `passwords` gives a node another password (a
    misconfigured backup). The cluster manager polls every broker every
    `status_poll_interval_s`, waits `status_timeout_s` for an answer (the link heartbeat
    interval when None, as rgmanager's status checks do), and restarts a broker that
    crashed when `restart` (recovery=restart). `activation` says who makes a broker the
    primary: the manager, or (`self`) the brokers themselves, the manager left out."""

    ha_replicate: str = "none"
    ha_backup_timeout_s: float = 10.0
    link_heartbeat_interval_s: float = 120.0
    link_maintenance_interval_s: float = 2.0
    ha_auth: bool = False
    ha_username: str = "ha"
    ha_password: str = "ha-secret"
    passwords: Mapping[str, str] = field(default_factory=dict)
    status_poll_interval_s: float = 1.0
    status_timeout_s: float | None = None
    restart: bool = True
    activation: str = MANAGER_ACTIVATED

    def __post_init__(self) -> None:
        if self.activation not in ACTIVATIONS:
            raise UsageError(f"activation {self.activation!r}: one of {', '.join(ACTIVATIONS)}")
        if self.ha_replicate not in REPLICATE_LEVELS:
            raise UsageError(
                f"ha_replicate {self.ha_replicate!r}: one of {', '.join(REPLICATE_LEVELS)}"
            )
        for name in (
            "ha_backup_timeout_s",
            "link_heartbeat_interval_s",
            "link_maintenance_interval_s",
            "status_poll_interval_s",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise UsageError(f"{name} must be a positive number of seconds, not {value!r}")

    @property
    def status_timeout(self) -> float:
        """How long the manager waits for a broker's status before calling it failed."""
        if self.status_timeout_s is not None:
            return self.status_timeout_s
        return self.link_heartbeat_interval_s

    def password_of(self, node: str) -> str:
        return str(self.passwords.get(node, self.ha_password))

    def misconfigured(self) -> frozenset[str]:
        """The brokers whose HA credentials are not the cluster's: they can never be ready."""
        if not self.ha_auth:
            return frozenset()
        return frozenset(n for n, pw in self.passwords.items() if pw != self.ha_password)

    @property
    def self_activated(self) -> bool:
        return self.activation == SELF_ACTIVATED

    def with_changes(self, **changes: Any) -> ActivePassiveSettings:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """`activation` only when the brokers activate themselves, so other runs' spec.json
        (and the failure database's ids) stay as they were."""
        out = asdict(self)
        out["passwords"] = dict(self.passwords)
        if self.activation == MANAGER_ACTIVATED:
            del out["activation"]
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> ActivePassiveSettings:
        fields = dict(raw)
        fields["passwords"] = {str(k): str(v) for k, v in dict(fields.get("passwords", {})).items()}
        return ActivePassiveSettings(**fields)
