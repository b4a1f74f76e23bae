"""The run spec: frozen data that says everything needed to run a scenario again."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from faults.ops import FaultOp, ops_from_json
from lab import __version__
from lab.errors import InputError, UsageError

__all__ = [
    "BACKENDS",
    "TARGETS",
    "Durability",
    "RunSpec",
    "Topology",
    "Workload",
    "git_revision",
    "parse_seed",
]

BACKENDS = ("process",)
TARGETS = ("broker_ref",)
SPEC_VERSION = 1
MAX_SEED = 2**63 - 1

SyncPolicy = Literal["SYNC", "WRITE_NO_SYNC", "NO_SYNC"]
AckPolicy = Literal["ALL", "SIMPLE_MAJORITY", "NONE"]


@dataclass(frozen=True)
class Topology:
    """How many nodes; each node name is n1, n2, …"""

    nodes: int = 1

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(f"n{i}" for i in range(1, self.nodes + 1))


@dataclass(frozen=True)
class Durability:
    """The durability triplet of the seeds, plus coalescing-sync."""

    master_sync: SyncPolicy = "NO_SYNC"
    replica_sync: SyncPolicy = "NO_SYNC"
    ack_policy: AckPolicy = "SIMPLE_MAJORITY"
    coalescing_sync: bool = True

    @property
    def triplet(self) -> str:
        return f"{self.master_sync},{self.replica_sync},{self.ack_policy}"


@dataclass(frozen=True)
class Workload:
    """The client workload: producers and consumers on one queue."""

    producers: int = 1
    consumers: int = 1
    rate: float = 200.0
    size: int = 100
    window: int = 100
    duration_s: float = 12.0
    queue: str = "lab"
    drain_timeout_s: float = 30.0


@dataclass(frozen=True)
class RunSpec:
    scenario: str
    seed: int
    target: str = "broker_ref"
    backend: str = "process"
    topology: Topology = field(default_factory=Topology)
    durability: Durability = field(default_factory=Durability)
    workload: Workload = field(default_factory=Workload)
    schedule: tuple[FaultOp, ...] = ()
    lab_version: str = __version__
    git_revision: str | None = None

    def with_schedule(self, schedule: tuple[FaultOp, ...]) -> RunSpec:
        return replace(self, schedule=schedule)

    def to_json(self) -> dict[str, Any]:
        return {
            "v": SPEC_VERSION,
            "scenario": self.scenario,
            "seed": self.seed,
            "target": self.target,
            "backend": self.backend,
            "topology": asdict(self.topology),
            "durability": asdict(self.durability),
            "workload": asdict(self.workload),
            "schedule": [op.to_json() for op in self.schedule],
            "lab_version": self.lab_version,
            "git_revision": self.git_revision,
        }

    @staticmethod
    def from_json(raw: Mapping[str, Any], source: Path) -> RunSpec:
        try:
            return RunSpec(
                scenario=str(raw["scenario"]),
                seed=parse_seed(str(raw["seed"])),
                target=str(raw.get("target", "broker_ref")),
                backend=str(raw.get("backend", "process")),
                topology=Topology(**raw.get("topology", {})),
                durability=Durability(**raw.get("durability", {})),
                workload=Workload(**raw.get("workload", {})),
                schedule=ops_from_json(list(raw.get("schedule", []))),
                lab_version=str(raw.get("lab_version", __version__)),
                git_revision=raw.get("git_revision"),
            )
        except (KeyError, TypeError, ValueError, UsageError) as exc:
            raise InputError(f"{source}: not a valid run spec: {exc}") from exc


def parse_seed(text: str) -> int:
    """A seed is a non-negative integer below 2**63."""
    try:
        seed = int(text, 10)
    except ValueError:
        raise UsageError(f"bad seed {text!r}: must be a non-negative integer") from None
    if not 0 <= seed <= MAX_SEED:
        raise UsageError(f"bad seed {text!r}: must be between 0 and {MAX_SEED}")
    return seed


def git_revision(root: Path) -> str | None:
    """The lab checkout's git revision, or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
