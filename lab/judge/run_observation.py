"""What the declared deviations' matchers look at in one run (lab.judge.deviations): the
prediction's outcome and violation kinds, the checker's counts, the longest gap in service,
the log codes written, and which declared texts the nodes' logs hold."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.judge.checker import CheckResult
from lab.judge.metrics import RunMetrics
from lab.judge.prediction import Verdict

__all__ = ["COUNTS", "LOG_FILES", "Observation"]

COUNTS = (
    *("attempted", "acknowledged", "failed", "indeterminate", "received", "lost"),
    *("unexpected", "resurrected", "recovered", "duplicated", "duplicate_deliveries"),
)
LOG_FILES = ("broker.log", "stderr.log")


@dataclass(frozen=True)
class Observation:
    """What the matchers look at in one run: the prediction's outcome and violation kinds,
    the checker's counts, the longest gap in service, the log codes written, and which of
    the declared texts some node's log holds."""

    outcome: str
    violations: tuple[str, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)
    longest_gap_s: float = 0.0
    codes: frozenset[str] = frozenset()
    log_found: frozenset[str] = frozenset()

    @staticmethod
    def gather(
        verdict: Verdict,
        check: CheckResult,
        metrics: RunMetrics,
        events: Iterable[Mapping[str, Any]],
        folder: Path | None,
        needles: Iterable[str] = (),
    ) -> Observation:
        counts = check.to_json()
        return Observation(
            outcome=verdict.outcome,
            violations=verdict.violations,
            counts={
                k: int(v["count"] if isinstance(v, dict) else v)
                for k, v in counts.items()
                if k in COUNTS
            },
            longest_gap_s=max((w.seconds for w in metrics.unavailable_windows), default=0.0),
            codes=frozenset(
                str(e["code"]) for e in events if e.get("kind") == "broker.log" and e.get("code")
            ),
            log_found=_texts_in_logs(folder, tuple(needles)) if folder is not None else frozenset(),
        )


def _texts_in_logs(folder: Path, needles: tuple[str, ...]) -> frozenset[str]:
    """The needles some node's log holds, each file read line by line."""
    if not needles:
        return frozenset()
    found: set[str] = set()
    for path in sorted(folder.glob("nodes/*/*")):
        if path.name not in LOG_FILES or not path.is_file():
            continue
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                found.update(n for n in needles if n not in found and n in line)
                if len(found) == len(needles):
                    return frozenset(found)
    return frozenset(found)
