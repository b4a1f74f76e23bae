"""What the queue checker reports (docs/run-folder.md, "The queue checker"): the sets' sizes,
the verdict categories with their first ids, and the verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["MAX_IDS", "CheckResult", "IdSet", "verdict"]

MAX_IDS = 1000


@dataclass(frozen=True)
class IdSet:
    """How many ids a category holds, and the first `MAX_IDS` of them, sorted."""

    count: int
    ids: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "ids": list(self.ids)}


@dataclass(frozen=True)
class CheckResult:
    """The checker's sets and verdict for one history."""

    valid: bool | Literal["unknown"]
    attempted: int
    acknowledged: int
    failed: int
    indeterminate: int
    received: int
    lost: IdSet
    unexpected: IdSet
    resurrected: IdSet
    recovered: IdSet
    duplicated: IdSet
    duplicate_deliveries: int

    def to_json(self) -> dict[str, Any]:
        """The `lab check --json` object of docs/run-folder.md, keys in its order."""
        return {
            "valid": self.valid,
            "attempted": self.attempted,
            "acknowledged": self.acknowledged,
            "failed": self.failed,
            "indeterminate": self.indeterminate,
            "received": self.received,
            "lost": self.lost.to_json(),
            "unexpected": self.unexpected.to_json(),
            "resurrected": self.resurrected.to_json(),
            "recovered": self.recovered.to_json(),
            "duplicated": self.duplicated.to_json(),
            "duplicate_deliveries": self.duplicate_deliveries,
        }


def verdict(*, lost: int, violations: int, drained: bool) -> bool | Literal["unknown"]:
    """False on unexpected or resurrected messages; lost ones are `unknown` unless drained."""
    if violations:
        return False
    if lost:
        return False if drained else "unknown"
    return True
