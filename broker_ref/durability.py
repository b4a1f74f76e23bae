"""Durability as the seeds define it: `<master sync>,<replica sync>,<replica ack policy>`.

Sync policies: SYNC (write and fsync before going on), WRITE_NO_SYNC (write to
the OS, fsync later), NO_SYNC (keep in the process, write later: "commit to the
network"). Ack policies: ALL replicas, a SIMPLE_MAJORITY, or NONE.

Coalescing-sync (the default) batches the master's concurrent commits into one
fsync before the clients are answered, whatever the master sync policy says; it
cannot be combined with master SYNC, as the seeds say.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["AckPolicy", "Durability", "SyncPolicy", "parse_durability"]


class SyncPolicy(enum.Enum):
    SYNC = "SYNC"
    WRITE_NO_SYNC = "WRITE_NO_SYNC"
    NO_SYNC = "NO_SYNC"


class AckPolicy(enum.Enum):
    ALL = "ALL"
    SIMPLE_MAJORITY = "SIMPLE_MAJORITY"
    NONE = "NONE"


@dataclass(frozen=True)
class Durability:
    master_sync: SyncPolicy = SyncPolicy.NO_SYNC
    replica_sync: SyncPolicy = SyncPolicy.NO_SYNC
    ack_policy: AckPolicy = AckPolicy.SIMPLE_MAJORITY

    def __str__(self) -> str:
        return f"{self.master_sync.value},{self.replica_sync.value},{self.ack_policy.value}"


def parse_durability(text: str) -> Durability:
    """Parse a triplet; raise ValueError naming what is wrong."""
    parts = [p.strip().upper() for p in text.split(",")]
    if len(parts) != 3:
        raise ValueError(f"durability must be <master sync>,<replica sync>,<ack policy>: {text!r}")
    try:
        master, replica = SyncPolicy(parts[0]), SyncPolicy(parts[1])
    except ValueError:
        names = ", ".join(p.value for p in SyncPolicy)
        raise ValueError(f"sync policies are {names}: {text!r}") from None
    try:
        ack = AckPolicy(parts[2])
    except ValueError:
        names = ", ".join(p.value for p in AckPolicy)
        raise ValueError(f"ack policies are {names}: {text!r}") from None
    return Durability(master, replica, ack)
