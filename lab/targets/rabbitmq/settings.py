"""A RabbitMQ cluster's own settings, read from `group.target_context.rabbitmq` (strings,
recorded in spec.json) and checked before anything starts.

    queue-type              quorum (default): a Raft group per queue, confirmed once a majority
                            holds a message | mirrored: a classic queue with a master and
                            mirrors (RabbitMQ's "classic queue mirroring", policy `ha-mode`)
    ha-mode                 mirrored only: all (the only one: every node holds a copy)
    ha-sync-mode            mirrored only: manual (RabbitMQ's default: a new mirror holds only
                            what arrives after it joined) | automatic (it copies the queue
                            first, blocking the queue meanwhile)
    ha-promote-on-failure   mirrored only: always (RabbitMQ's default: a mirror is promoted
                            when the master's node fails, synchronised or not) | when-synced
    ha-promote-on-shutdown  mirrored only: when-synced (RabbitMQ's default) | always: the same
                            on a controlled stop of the master's node
    partition-handling      pause_minority (the lab's default) | autoheal | ignore
                            (RabbitMQ's `cluster_partition_handling`; RabbitMQ's own default
                            is ignore: after a partition heals the cluster stays split until
                            an operator restarts nodes, which no scenario does)
    net-ticktime            seconds (default 5, Erlang's own 60): how long a silent peer node
                            takes to be declared down (between 0.75 and 1.25 times this)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from lab.ground.errors import UsageError

__all__ = ["DEFAULTS", "KEYS", "TARGET", "RabbitSettings", "failure_timeouts"]

TARGET = "rabbitmq"  # its name in a group's target_context
QueueType = Literal["quorum", "mirrored"]
QUEUE_TYPES: tuple[QueueType, ...] = ("quorum", "mirrored")
PARTITION_MODES = ("pause_minority", "autoheal", "ignore")
MIRRORED_KEYS = ("ha-mode", "ha-sync-mode", "ha-promote-on-failure", "ha-promote-on-shutdown")
KEYS = ("queue-type", *MIRRORED_KEYS, "partition-handling", "net-ticktime")
# What a run that gives none of them has (a deviation declared for some applies to it).
DEFAULTS = {"queue-type": "quorum", "partition-handling": "pause_minority"}
MIRRORED_DEFAULTS = {
    "ha-mode": "all",
    "ha-sync-mode": "manual",
    "ha-promote-on-failure": "always",
    "ha-promote-on-shutdown": "when-synced",
}


def _where(key: str) -> str:
    return f"group.target_context.{TARGET}.{key}"


def _choice(raw: Mapping[str, str], key: str, choices: tuple[str, ...], default: str) -> str:
    value = raw.get(key, default)
    if value not in choices:
        raise UsageError(f"{_where(key)}: one of {', '.join(choices)}, not {value!r}")
    return value


@dataclass(frozen=True)
class RabbitSettings:
    queue_type: QueueType = "quorum"
    ha_sync_mode: str = "manual"
    ha_promote_on_failure: str = "always"
    ha_promote_on_shutdown: str = "when-synced"
    partition_handling: str = "pause_minority"
    net_ticktime_s: int = 5

    @property
    def mirrored(self) -> bool:
        return self.queue_type == "mirrored"

    def policy(self) -> dict[str, str]:
        """The mirroring policy's definition (RabbitMQ's keys and values)."""
        return {
            "ha-mode": "all",
            "ha-sync-mode": self.ha_sync_mode,
            "ha-promote-on-failure": self.ha_promote_on_failure,
            "ha-promote-on-shutdown": self.ha_promote_on_shutdown,
        }

    @staticmethod
    def parse(raw: Mapping[str, str]) -> RabbitSettings:
        """The settings of `group.target_context.rabbitmq`; a UsageError naming the key."""
        unknown = sorted(set(raw) - set(KEYS))
        if unknown:
            raise UsageError(f"{_where(unknown[0])}: unknown setting (known: {', '.join(KEYS)})")
        queue_type = _choice(raw, "queue-type", QUEUE_TYPES, "quorum")
        stray = [k for k in MIRRORED_KEYS if k in raw]
        if stray and queue_type != "mirrored":
            raise UsageError(
                f"{_where(stray[0])}: only with queue-type mirrored (a quorum queue has no "
                "mirroring policy)"
            )
        if raw.get("ha-mode", "all") != "all":
            raise UsageError(
                f"{_where('ha-mode')}: all, not {raw['ha-mode']!r} (the lab's group keeps a "
                "copy of the queue on every node, so that every node has a role)"
            )
        mode = _choice(raw, "partition-handling", PARTITION_MODES, "pause_minority")
        return RabbitSettings(
            queue_type=queue_type,  # type: ignore[arg-type]
            ha_sync_mode=_choice(raw, "ha-sync-mode", ("manual", "automatic"), "manual"),
            ha_promote_on_failure=_choice(
                raw, "ha-promote-on-failure", ("always", "when-synced"), "always"
            ),
            ha_promote_on_shutdown=_choice(
                raw, "ha-promote-on-shutdown", ("when-synced", "always"), "when-synced"
            ),
            partition_handling=mode,
            net_ticktime_s=_ticktime(raw.get("net-ticktime")),
        )


def _ticktime(value: str | None) -> int:
    if value is None:
        return 5
    if not value.isdigit() or not 2 <= int(value) <= 120:
        raise UsageError(f"{_where('net-ticktime')}: whole seconds, 2..120, not {value!r}")
    return int(value)


def failure_timeouts(settings: RabbitSettings) -> tuple[tuple[str, float], ...]:
    """The timeouts of RabbitMQ's own failure detection under a replicated group's names
    (TargetTraits.timeouts), from net_ticktime T: a node ticks its peers every T/4 and finds
    a silent one down after 0.75 T to 1.25 T (Erlang's "net_ticktime"); only then does a
    quorum queue elect, a mirror get promoted, or partition handling act. A cut shorter
    than that is ridden out unseen; one longer is a partition."""
    tick = float(settings.net_ticktime_s)
    return (
        ("heartbeat", tick / 4),
        ("election timeout", tick),
        ("election x2", 2 * tick),
        ("lease", 1.25 * tick),
        ("replica timeout", 1.25 * tick),
    )
