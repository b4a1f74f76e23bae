"""What the queue checker reports (docs/run-folder.md, "The queue checker"): the sets' sizes,
the verdict categories with their first ids, and the verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["MAX_IDS", "CheckResult", "IdSet", "verdict"]

MAX_IDS = 1000


@dataclass(frozen=True)
class IdSet:
    """How many ids a category holds, and the first `MAX_IDS` (1000) of them, sorted.

    Attributes:
        count: how many message ids.
        ids: the first of them, sorted.
    """

    count: int
    ids: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "ids": list(self.ids)}


@dataclass(frozen=True)
class CheckResult:
    """The checker's sets and verdict for one history (docs/run-folder.md, "The queue
    checker"): the same object as `lab check --json` and result.json's `check`.

    Attributes:
        valid: True; False when messages were lost, unexpected or resurrected; "unknown"
            when lost is the only violation and a consumer could not drain the queue.
        attempted: message ids with any send.
        acknowledged: ids with at least one send the broker acknowledged.
        failed: ids the broker certainly refused.
        indeterminate: ids whose send outcome is unknown (a dropped connection).
        received: ids some consumer received.
        lost: acknowledged but never received (a violation).
        unexpected: received but never sent (a violation).
        resurrected: refused, then delivered (a violation).
        recovered: of unknown outcome, and received (fine).
        duplicated: received more than once (a scenario says whether that is allowed).
        duplicate_deliveries: how many deliveries beyond the first.
    """

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
