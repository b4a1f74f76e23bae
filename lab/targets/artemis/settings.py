"""How an Artemis cluster decides which broker is active: the target's own settings, read from
`group.target_context.artemis` (strings, recorded in spec.json) and checked before anything
starts.

    activation        lock-manager (default) | quorum-voting
    lock-manager      file (default: one lock folder the pair shares) | zookeeper
    zookeeper         host:port[,host:port…] of a ZooKeeper ensemble (lock-manager zookeeper),
                      or `lab` on hosts: the lab runs one for the run on its own machine,
                      which every host reaches through its SSH connection
    session-ms        ZooKeeper session timeout (default 4000; Artemis's own 18000)
    failback          true (default) | false: a backup that took over hands back to its
                      restarted primary once it is in sync (allow-failback)
    voters            quorum-voting: how many other primary/backup pairs vote (default 2,
                      so that three pairs form the quorum Artemis's manual asks for)
    vote-on-replication-failure
                      quorum-voting: a primary that loses its backup asks for a vote too
                      (default true, as `artemis create --replicated` writes it)
    quorum-vote-wait  quorum-voting: seconds to wait for the votes (default 2; Artemis's 30)
    vote-retries, vote-retry-wait-ms
                      quorum-voting: a backup's further votes (default 12 and 1000;
                      Artemis's 12 and 5000)

The timings of the cluster connection come from the active-passive settings the C++
broker's document names (lab.targets.artemis.config says how).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from lab.ground.errors import UsageError

__all__ = ["DEFAULTS", "KEYS", "TARGET", "ArtemisSettings"]

TARGET = "artemis"  # its name in a group's target_context
Activation = Literal["lock-manager", "quorum-voting"]
LockManager = Literal["file", "zookeeper"]
ACTIVATIONS: tuple[Activation, ...] = ("lock-manager", "quorum-voting")
LOCK_MANAGERS: tuple[LockManager, ...] = ("file", "zookeeper")
# What a run that gives none of them has (a deviation declared for some applies to it).
DEFAULTS = {"activation": "lock-manager", "lock-manager": "file", "failback": "true"}
KEYS = (
    "activation",
    "lock-manager",
    "zookeeper",
    "session-ms",
    "failback",
    "voters",
    "vote-on-replication-failure",
    "quorum-vote-wait",
    "vote-retries",
    "vote-retry-wait-ms",
)


def _where(key: str) -> str:
    return f"group.target_context.{TARGET}.{key}"


def _bool(raw: Mapping[str, str], key: str, default: bool) -> bool:
    value = raw.get(key)
    if value is None:
        return default
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise UsageError(f"{_where(key)}: true or false, not {value!r}")


def _int(raw: Mapping[str, str], key: str, default: int, low: int, high: int) -> int:
    value = raw.get(key)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise UsageError(f"{_where(key)}: an integer, not {value!r}") from None
    if not low <= number <= high:
        raise UsageError(f"{_where(key)}: {low}..{high}, not {number}")
    return number


def _choice(raw: Mapping[str, str], key: str, choices: tuple[str, ...]) -> str:
    value = raw.get(key, choices[0])
    if value not in choices:
        raise UsageError(f"{_where(key)}: one of {', '.join(choices)}, not {value!r}")
    return value


def _hosts(text: str) -> str:
    if text == "lab":
        return text
    for part in text.split(","):
        host, sep, port = part.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageError(f"{_where('zookeeper')}: host:port[,host:port…] or lab, not {text!r}")
    return text


@dataclass(frozen=True)
class ArtemisSettings:
    activation: Activation = "lock-manager"
    lock_manager: LockManager = "file"
    zookeeper: str | None = None
    session_ms: int = 4000
    failback: bool = True
    voters: int = 2
    vote_on_replication_failure: bool = True
    quorum_vote_wait_s: int = 2
    vote_retries: int = 12
    vote_retry_wait_ms: int = 1000

    @property
    def quorum(self) -> bool:
        return self.activation == "quorum-voting"

    @staticmethod
    def parse(raw: Mapping[str, str]) -> ArtemisSettings:
        """The settings of `group.target_context.artemis`; a UsageError naming the key."""
        unknown = sorted(set(raw) - set(KEYS))
        if unknown:
            raise UsageError(f"{_where(unknown[0])}: unknown setting (known: {', '.join(KEYS)})")
        activation = _choice(raw, "activation", ACTIVATIONS)
        lock_manager = _choice(raw, "lock-manager", LOCK_MANAGERS)
        zookeeper = raw.get("zookeeper")
        if activation == "quorum-voting" and ("lock-manager" in raw or zookeeper is not None):
            raise UsageError(
                f"{_where('activation')}: quorum-voting uses no lock manager "
                "(leave lock-manager and zookeeper out)"
            )
        if lock_manager == "zookeeper" and zookeeper is None:
            raise UsageError(
                f"{_where('zookeeper')}: lock-manager zookeeper needs the ensemble's "
                "host:port[,host:port…] (or lab on hosts)"
            )
        for key in ("zookeeper", "session-ms"):
            if lock_manager == "file" and key in raw:
                raise UsageError(f"{_where(key)}: only with lock-manager zookeeper")
        quorum_keys = ("voters", "vote-on-replication-failure", "quorum-vote-wait")
        stray = [k for k in (*quorum_keys, "vote-retries", "vote-retry-wait-ms") if k in raw]
        if stray and activation != "quorum-voting":
            raise UsageError(f"{_where(stray[0])}: only with activation quorum-voting")
        return ArtemisSettings(
            activation=activation,  # type: ignore[arg-type]
            lock_manager=lock_manager,  # type: ignore[arg-type]
            zookeeper=None if zookeeper is None else _hosts(zookeeper),
            session_ms=_int(raw, "session-ms", 4000, 1000, 120_000),
            failback=_bool(raw, "failback", True),
            voters=_int(raw, "voters", 2, 2, 4),
            vote_on_replication_failure=_bool(raw, "vote-on-replication-failure", True),
            quorum_vote_wait_s=_int(raw, "quorum-vote-wait", 2, 1, 60),
            vote_retries=_int(raw, "vote-retries", 12, 0, 1000),
            vote_retry_wait_ms=_int(raw, "vote-retry-wait-ms", 1000, 100, 60_000),
        )
