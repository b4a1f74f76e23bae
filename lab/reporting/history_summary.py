"""A few lines on a run's history, for people: operations by kind and outcome, the checker's
sets, availability, failover and masters over time, the verdict."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lab.judge.metrics import read_events, read_operations, run_metrics
from lab.run.folder import RunFolder

__all__ = ["history_summary"]

NS = 1_000_000_000


def history_summary(folder: RunFolder, result: Mapping[str, Any], check: Mapping[str, Any]) -> str:
    """A few lines on the history: operations by kind and outcome, the checker's sets,
    availability and masters over time."""
    table = read_operations(folder.history)
    rows = table.select(["time", "process", "type", "f", "node"]).to_pylist()
    counts: dict[tuple[str, str], int] = {}
    for r in rows:
        key = (str(r["f"]), str(r["type"]))
        counts[key] = counts.get(key, 0) + 1
    processes = sorted({str(r["process"]) for r in rows})
    nodes = sorted({str(r["node"]) for r in rows if r["node"]})
    times = [int(r["time"]) / NS for r in rows]
    span = f"{min(times):.3f} s – {max(times):.3f} s" if times else "no operations"
    lines = [
        f"history.jsonl: {len(rows)} operations by {len(processes)} processes "
        f"({', '.join(processes)}), on nodes {', '.join(nodes) or '-'}; {span}",
        "",
        f"{'':<10}{'invoke':>9}{'ok':>9}{'fail':>9}{'info':>9}",
    ]
    for f in ("send", "receive", "drain"):
        cells = "".join(f"{counts.get((f, t), 0):>9}" for t in ("invoke", "ok", "fail", "info"))
        lines.append(f"{f:<10}{cells}")
    lines.append("")
    if check:
        lines.append(
            f"checker: valid={json.dumps(check.get('valid'))}; attempted {check.get('attempted')}, "
            f"acknowledged {check.get('acknowledged')}, failed {check.get('failed')}, "
            f"indeterminate {check.get('indeterminate')}, received {check.get('received')}"
        )
        verdicts = ("lost", "unexpected", "resurrected", "recovered", "duplicated")
        lines.append(
            "; ".join(f"{name} {check.get(name, {}).get('count', 0)}" for name in verdicts)
            + f"; duplicate deliveries {check.get('duplicate_deliveries', 0)}"
        )
    metrics = result.get("metrics") or run_metrics(table, read_events(folder.events)).to_json()
    windows = metrics.get("unavailable_windows") or []
    shown = ", ".join(f"{w['start_s']:.3f}–{w['end_s']:.3f} s ({w['seconds']} s)" for w in windows)
    lines.append(
        f"acknowledged/s during the load: {metrics.get('acknowledged_per_s')}; "
        f"no acknowledged send for over {metrics.get('unavailability_threshold_s')} s: "
        f"{shown or 'never'}"
    )
    failover = metrics.get("failover_s") or []
    if failover:
        lines.append(
            "failover per fault (s to the next acknowledged send): "
            + ", ".join("none" if s is None else str(s) for s in failover)
        )
    masters = metrics.get("masters") or []
    lines.append(
        "roles: "
        + (", ".join(f"{m['time_s']} s {m['node']} {m['role']}" for m in masters) or "none seen")
    )
    lines.append(f"two masters at once: {'yes' if metrics.get('two_masters_seen') else 'no'}")
    if result.get("verdict"):
        lines.append(f"verdict: {result['verdict']}")
        lines.extend(f"  - {reason}" for reason in result.get("reasons") or [])
    if result.get("error"):
        lines.append(f"error: {result['error']}")
    return "\n".join(lines) + "\n"
