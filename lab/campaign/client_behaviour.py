"""What the clients met in a run, and how it was judged, as behaviours (the client half of
lab.campaign.behaviour): counts in buckets, error messages without what varies from run to
run.

    client_outcomes(history.jsonl) → ClientOutcomes     kinds of errors, drains, redeliveries
    judgement(result.json, outcomes) → behaviours        verdict, violations, client counts
    count_bucket(n), seconds_bucket(s)                    0, 1, 2-3, 4-7 … 64+; <0.5s … 8s+
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ClientOutcomes",
    "client_outcomes",
    "count_bucket",
    "error_class",
    "judgement",
    "seconds_bucket",
]


def count_bucket(n: int) -> str:
    if n <= 1:
        return str(max(n, 0))
    low = 1 << (n.bit_length() - 1)
    return "64+" if low >= 64 else f"{low}-{2 * low - 1}"


_SECONDS = ((0.5, "<0.5s"), (1.0, "0.5-1s"), (2.0, "1-2s"), (4.0, "2-4s"), (8.0, "4-8s"))


def seconds_bucket(seconds: float) -> str:
    return next((name for bound, name in _SECONDS if seconds < bound), "8s+")


@dataclass(frozen=True)
class ClientOutcomes:
    """What history.jsonl says beyond the checker's counts: kinds of errors, redeliveries."""

    info_errors: frozenset[str] = frozenset()
    fail_errors: frozenset[str] = frozenset()
    drains: frozenset[str] = frozenset()  # how drains ended, when not ok
    redelivered: int = 0


def error_class(text: str) -> str:
    """An error message without what varies from run to run (numbers, addresses, ids)."""
    words = text.strip().lower().split()
    if words and words[0].startswith("amqp:"):
        return words[0].rstrip(":,.")
    return re.sub(r"\d+", "#", " ".join(words[:3])).rstrip(":,.")


def client_outcomes(history: Path) -> ClientOutcomes:
    """The error kinds of sends that ended `info` or `fail`, drains that did not end `ok`,
    and receives marked redelivered; a torn last line is ignored."""
    info: set[str] = set()
    fail: set[str] = set()
    drains: set[str] = set()
    redelivered = 0
    if not history.is_file():
        return ClientOutcomes()
    with history.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if '"error"' not in line and '"redelivered"' not in line and '"drain"' not in line:
                continue
            try:
                op = json.loads(line)
            except ValueError:
                continue
            kind, f = op.get("type"), op.get("f")
            if f == "send" and kind in ("info", "fail"):
                (info if kind == "info" else fail).add(error_class(str(op.get("error", ""))))
            elif f == "drain" and kind in ("fail", "info"):
                drains.add(str(kind))
            elif f == "receive" and op.get("redelivered") is True:
                redelivered += 1
    return ClientOutcomes(frozenset(info), frozenset(fail), frozenset(drains), redelivered)


def judgement(result: Mapping[str, Any], clients: ClientOutcomes) -> set[str]:
    found: set[str] = set()
    if "verdict" in result:
        found.add(f"verdict:{result['verdict']}")
    found.update(f"violation:{kind}" for kind in result.get("violations") or ())
    check = result.get("check") or {}
    for name in ("indeterminate", "failed", "recovered", "duplicated"):
        value = check.get(name)
        count = value.get("count") if isinstance(value, Mapping) else value
        if isinstance(count, int):
            found.add(f"{name}:{count_bucket(count)}")
    metrics = result.get("metrics") or {}
    if metrics.get("two_masters_seen"):
        found.add("two-masters")
    consumed = metrics.get("consumed_before_replicated")
    if isinstance(consumed, int):
        found.add(f"consumed-before-replicated:{count_bucket(consumed)}")
    found.update(f"info:{c}" for c in clients.info_errors)
    found.update(f"fail:{c}" for c in clients.fail_errors)
    found.update(f"drain:{d}" for d in clients.drains)
    if clients.redelivered:
        found.add(f"redelivered:{count_bucket(clients.redelivered)}")
    return found
