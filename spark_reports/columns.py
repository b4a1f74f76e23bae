"""How the page shows a column: its header in words (with the unit) and how its numbers are
written. The CSV and Parquet files keep the column names; only the page uses these.

    header("held_ci_low_pct")            "Held, 95 % CI low (%)"
    shown("unavailable_total_s", 3.1416) ("3.14", "number")

A column the table does not know (a pivot's configurations, "No HA", "8/8") is shown under
its own name, which is already words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["COLUMNS", "Format", "Shown", "header", "shown"]

Format = Literal["text", "long", "code", "count", "pct", "seconds", "ms", "rate", "list"]


@dataclass(frozen=True)
class Shown:
    header: str
    format: Format


_WORDS: dict[str, tuple[str, Format]] = {
    # keys
    "scenario": ("Scenario", "text"),
    "target": ("Target", "text"),
    "backend": ("Backend", "text"),
    "mode": ("Mode", "text"),
    "nodes": ("Nodes", "count"),
    "durability": ("Durability", "text"),
    "config": ("Configuration", "text"),
    "clients": ("Producers / consumers", "text"),
    "producers": ("Producers", "count"),
    "consumers": ("Consumers", "count"),
    "night": ("Night (UTC)", "text"),
    "period": ("Period", "text"),
    "period_before": ("Period before", "text"),
    "kind": ("Violation", "text"),
    "cell": ("Cell", "text"),
    "bucket": ("Failover time", "text"),
    # runs and verdicts
    "run_id": ("Run", "long"),
    "folder": ("Folder", "long"),
    "seed": ("Seed", "text"),
    "runs": ("Runs", "count"),
    "held": ("Held", "count"),
    "broken": ("Broken", "count"),
    "unknown": ("Unknown", "count"),
    "deviation": ("Deviation", "count"),
    "unreadable": ("Unreadable", "count"),
    "interrupted": ("Interrupted", "count"),
    "replays": ("Replays", "count"),
    "outcome": ("Verdict", "text"),
    "verdict": ("Verdict", "text"),
    "other_outcomes": ("Other verdicts", "list"),
    "violating_runs": ("Runs with a violation", "count"),
    "violations": ("Violations", "list"),
    "reasons": ("Reasons", "long"),
    "problem": ("What is wrong", "long"),
    "reproduce": ("Reproduce with", "code"),
    "known": ("Failure database", "text"),
    "failure": ("Failure id", "text"),
    "replay_outcome": ("Its replays here", "text"),
    "status": ("Status now", "text"),
    "campaign": ("Campaign", "long"),
    "campaigns": ("Campaigns", "list"),
    "held_pct": ("Held (%)", "pct"),
    "held_ci_low_pct": ("Held, 95 % CI low (%)", "pct"),
    "held_ci_high_pct": ("Held, 95 % CI high (%)", "pct"),
    "share_pct": ("Share of the cell's runs (%)", "pct"),
    "cells": ("Cells", "count"),
    "new_runs": ("Runs new to the failure database", "count"),
    # behaviour coverage (guided campaigns)
    "behaviours": ("Distinct behaviours", "count"),
    "runs_since_new": ("Runs since a new behaviour", "count"),
    "stalled": ("Stalled", "text"),
    # messages
    "lost": ("Acknowledged, lost", "count"),
    "acknowledged_lost": ("Acknowledged, lost", "count"),
    "duplicated": ("Duplicated", "count"),
    "resurrected": ("Resurrected", "count"),
    "unexpected": ("Unexpected", "count"),
    "two_masters_runs": ("Runs with two masters", "count"),
    # availability and failover
    "unavailable_total_s": ("Unavailable, total (s)", "seconds"),
    "unavailable_longest_s": ("Unavailable, longest (s)", "seconds"),
    "availability_pct": ("Available (%)", "pct"),
    "failovers": ("Faults", "count"),
    "faults": ("Faults", "count"),
    "failovers_never": ("Faults never followed by an ack", "count"),
    "failover_p50_s": ("Failover, median (s)", "seconds"),
    "failover_p90_s": ("Failover, 90th pct (s)", "seconds"),
    "failover_p95_s": ("Failover, 95th pct (s)", "seconds"),
    "failover_p99_s": ("Failover, 99th pct (s)", "seconds"),
    "failover_max_s": ("Failover, longest (s)", "seconds"),
    # performance
    "throughput_msgs_s": ("Throughput (msg/s)", "rate"),
    "throughput_kib_s": ("Throughput (KiB/s)", "rate"),
    "change_pct": ("Throughput vs No HA (%)", "pct"),
    "ack_p50_ms": ("Send→ack, median (ms)", "ms"),
    "ack_p95_ms": ("Send→ack, 95th pct (ms)", "ms"),
    "ack_p99_ms": ("Send→ack, 99th pct (ms)", "ms"),
    "receive_p50_ms": ("Send→receive, median (ms)", "ms"),
    "receive_p95_ms": ("Send→receive, 95th pct (ms)", "ms"),
    "receive_p99_ms": ("Send→receive, 99th pct (ms)", "ms"),
    "ack_unmatched": ("Acks not matched to a send", "count"),
    # regressions
    "regression": ("Regression", "text"),
    "before": ("Before", "text"),
    "after": ("After", "text"),
}

COLUMNS: dict[str, Shown] = {name: Shown(*words) for name, words in _WORDS.items()}
"""Every column the report's tables have, by name."""


def header(name: str) -> str:
    """The column's header on the page."""
    known = COLUMNS.get(name)
    return known.header if known is not None else name


def _decimals(value: float, digits: int) -> str:
    text = f"{value:,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _number(format: Format, value: float) -> str:
    if format == "count":
        return f"{value:,.0f}"
    if format == "pct":
        return _decimals(value, 1)
    if format == "rate":
        return _decimals(value, 0 if abs(value) >= 100 else 1)
    if format in ("seconds", "ms"):
        magnitude = abs(value)
        return _decimals(value, 0 if magnitude >= 100 else 1 if magnitude >= 10 else 2)
    return _decimals(value, 3)


def shown(name: str, value: object, default: Format = "text") -> tuple[str, Format]:
    """The cell's text and how it is laid out ("" for no value); `default` is the format of
    a column the table does not know (a pivot's configurations)."""
    known = COLUMNS.get(name)
    format: Format = known.format if known is not None else default
    if value is None:
        return "", format
    if isinstance(value, bool):
        return ("yes" if value else "no"), "text"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value), "list"
    if isinstance(value, int | float):
        if format in ("text", "long", "code", "list"):
            return str(value), "text"  # a seed or an id, not a quantity
        return _number(format, float(value)), format
    return str(value), format
