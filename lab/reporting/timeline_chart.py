"""A run's timeline as one PNG, in the spirit of Jepsen's rate and latency plots.

    rate     acknowledged sends and receives per second, per time bucket
    latency  each send's latency (invoke to completion), by outcome
    roles    the master over time as a band (red where two nodes claimed it at once),
             then one row per node with its role

Fault windows (from `fault.start` / `fault.end` events) are shaded and labelled on
every panel. Times are seconds since the run started (the run clock of docs/run-folder.md).
Drawn with matplotlib's Agg canvas directly, so pyplot's global state is never touched.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = [
    "CHART_SIZE_PX",
    "FaultWindow",
    "RoleSegment",
    "Timeline",
    "render_timeline",
    "timeline_from_run",
]

NS = 1_000_000_000
CHART_SIZE_PX = (1200, 800)
_DPI = 100
_MAX_BUCKETS = 120

_ROLE_COLOURS = {
    "MASTER": "#1f5fa8",
    "REPLICA": "#8fbce6",
    "WAITING": "#d9d9d9",
    "UNREACHABLE": "#f2c4a0",
    "DETACHED": "#e6a0c4",
    "PAUSED": "#9e9ac8",
    "DOWN": "#ffffff",
}
_OUTCOME_COLOURS = {"ok": "#2b8a3e", "fail": "#c92a2a", "info": "#e8a202"}
# one colour per fault, in order; overlapping windows stay apart
_FAULT_COLOURS = ("#ff922b", "#be4bdb", "#15aabf", "#fab005", "#e64980", "#82c91e")
_FAULT_LABEL_ROWS = 4


@dataclass(frozen=True)
class FaultWindow:
    id: str
    label: str
    start_s: float
    end_s: float


@dataclass(frozen=True)
class RoleSegment:
    node: str
    role: str  # a node.role role, or DOWN (killed/stopped) or PAUSED
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Timeline:
    end_s: float
    bucket_s: float
    bucket_starts_s: tuple[float, ...]
    sends_ok_per_s: tuple[float, ...]
    receives_per_s: tuple[float, ...]
    # (invoke time s, latency ms, outcome ok/fail/info) of every completed send
    send_latencies: tuple[tuple[float, float, str], ...]
    faults: tuple[FaultWindow, ...]
    roles: tuple[RoleSegment, ...]
    nodes: tuple[str, ...]

    def masters(self) -> tuple[RoleSegment, ...]:
        return tuple(s for s in self.roles if s.role == "MASTER")


def _bucket_size(end_s: float) -> float:
    """A round bucket (0.1, 0.2, 0.25, 0.5, 1, 2, 5 … s) giving at most _MAX_BUCKETS."""
    raw = max(end_s, 0.1) / _MAX_BUCKETS
    scale = 10 ** math.floor(math.log10(raw))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if step * scale >= raw:
            return max(0.1, round(step * scale, 6))
    return max(0.1, 10 * scale)


def _per_second(times_s: Iterable[float], bucket_s: float, buckets: int) -> tuple[float, ...]:
    counts = [0] * buckets
    for t in times_s:
        i = min(buckets - 1, max(0, int(t // bucket_s)))
        counts[i] += 1
    return tuple(round(c / bucket_s, 3) for c in counts)


def _send_latencies(rows: list[dict[str, Any]]) -> tuple[tuple[float, float, str], ...]:
    pending: dict[tuple[str, str], int] = {}
    found: list[tuple[float, float, str]] = []
    for op in rows:
        if op["f"] != "send":
            continue
        key = (str(op["process"]), str(op["value"]))
        if op["type"] == "invoke":
            pending[key] = int(op["time"])
        elif key in pending:
            started = pending.pop(key)
            latency_ms = (int(op["time"]) - started) / 1e6
            found.append((round(started / NS, 6), round(latency_ms, 3), str(op["type"])))
    return tuple(found)


def _fault_windows(events: Sequence[Mapping[str, Any]], end_s: float) -> tuple[FaultWindow, ...]:
    starts: dict[str, Mapping[str, Any]] = {}
    ends: dict[str, float] = {}
    for e in events:
        fault_id = str(e.get("id"))
        if e.get("kind") == "fault.start":
            starts.setdefault(fault_id, e)
        elif e.get("kind") == "fault.end":
            ends.setdefault(fault_id, int(e["time"]) / NS)
    windows = []
    for fault_id, e in starts.items():
        start_s = int(e["time"]) / NS
        label = f"{fault_id} {e.get('fault')} {e.get('target')}"
        windows.append(
            FaultWindow(fault_id, label, start_s, max(start_s, ends.get(fault_id, end_s)))
        )
    return tuple(sorted(windows, key=lambda w: w.start_s))


def _role_segments(events: Sequence[Mapping[str, Any]], end_s: float) -> tuple[RoleSegment, ...]:
    """Each node's role from node.role events; killed or stopped is DOWN, frozen PAUSED."""
    current: dict[str, tuple[str, float]] = {}  # node -> (role, since)
    before_pause: dict[str, str | None] = {}
    segments: list[RoleSegment] = []

    def change(node: str, role: str | None, at_s: float) -> None:
        if node in current:
            old, since = current.pop(node)
            if at_s > since:
                segments.append(RoleSegment(node, old, since, at_s))
        if role is not None:
            current[node] = (role, at_s)

    for e in sorted(events, key=lambda e: int(e.get("time", 0))):
        node = e.get("node")
        if not node:
            continue
        at_s = int(e["time"]) / NS
        kind = e.get("kind")
        if kind == "node.role" and e.get("role"):
            change(str(node), str(e["role"]), at_s)
        elif kind in ("node.kill", "node.stop", "node.exit"):
            change(str(node), "DOWN", at_s)
        elif kind == "node.start":
            change(str(node), None, at_s)
        elif kind == "node.pause":
            before_pause[str(node)] = current.get(str(node), (None, 0.0))[0]
            change(str(node), "PAUSED", at_s)
        elif kind == "node.resume":
            change(str(node), before_pause.pop(str(node), None), at_s)
    for node in list(current):
        change(node, None, end_s)
    return tuple(sorted(segments, key=lambda s: (s.node, s.start_s)))


def timeline_from_run(history: pa.Table, events: list[dict[str, Any]]) -> Timeline:
    """The figures behind the chart, from `read_operations` and `read_events` of one run."""
    rows = history.select(["time", "process", "type", "f", "value"]).to_pylist()
    last_op = max((int(r["time"]) for r in rows), default=0)
    last_event = max((int(e.get("time", 0)) for e in events), default=0)
    end_s = max(last_op, last_event) / NS
    bucket_s = _bucket_size(end_s)
    buckets = max(1, math.ceil(end_s / bucket_s))
    sends_ok = (r["time"] / NS for r in rows if r["f"] == "send" and r["type"] == "ok")
    receives = (r["time"] / NS for r in rows if r["f"] == "receive" and r["type"] == "ok")
    nodes = sorted(
        {str(e["node"]) for e in events if e.get("node") and str(e.get("kind")).startswith("node.")}
    )
    return Timeline(
        end_s=round(end_s, 6),
        bucket_s=bucket_s,
        bucket_starts_s=tuple(round(i * bucket_s, 6) for i in range(buckets)),
        sends_ok_per_s=_per_second(sends_ok, bucket_s, buckets),
        receives_per_s=_per_second(receives, bucket_s, buckets),
        send_latencies=_send_latencies(rows),
        faults=_fault_windows(events, end_s),
        roles=_role_segments(events, end_s),
        nodes=tuple(nodes),
    )


def _two_master_spans(masters: tuple[RoleSegment, ...]) -> list[tuple[float, float]]:
    spans = []
    for i, a in enumerate(masters):
        for b in masters[i + 1 :]:
            if a.node != b.node and a.start_s < b.end_s and b.start_s < a.end_s:
                spans.append((max(a.start_s, b.start_s), min(a.end_s, b.end_s)))
    return spans


def render_timeline(timeline: Timeline, title: str) -> bytes:
    """The chart as PNG bytes, CHART_SIZE_PX pixels."""
    width, height = CHART_SIZE_PX
    fig = Figure(figsize=(width / _DPI, height / _DPI), dpi=_DPI)
    FigureCanvasAgg(fig)
    rows = 1 + len(timeline.nodes)
    grid = fig.add_gridspec(3, 1, height_ratios=[3, 2, max(1.0, 0.45 * rows)], hspace=0.22)
    rate = fig.add_subplot(grid[0])
    latency = fig.add_subplot(grid[1], sharex=rate)
    roles = fig.add_subplot(grid[2], sharex=rate)
    fig.suptitle(title, fontsize=11)
    fig.subplots_adjust(left=0.08, right=0.98, top=0.94, bottom=0.06)

    edges = [*timeline.bucket_starts_s, round(timeline.end_s, 6)]
    if len(edges) > 1:
        rate.stairs(
            timeline.sends_ok_per_s,
            edges[: len(timeline.sends_ok_per_s) + 1],
            label="acknowledged sends/s",
            color="#1f5fa8",
            linewidth=1.4,
        )
        rate.stairs(
            timeline.receives_per_s,
            edges[: len(timeline.receives_per_s) + 1],
            label="receives/s",
            color="#2b8a3e",
            linewidth=1.0,
            linestyle="--",
        )
    rate.set_ylabel(f"per s ({timeline.bucket_s:g} s buckets)")
    rate.legend(loc="upper right", fontsize=8)

    for outcome, colour in _OUTCOME_COLOURS.items():
        points = [(t, ms) for t, ms, o in timeline.send_latencies if o == outcome]
        if points:
            latency.scatter(
                [t for t, _ in points],
                [max(ms, 0.01) for _, ms in points],
                s=4,
                color=colour,
                label=f"send {outcome}",
                linewidths=0,
            )
    if timeline.send_latencies:
        latency.set_yscale("log")
        latency.legend(loc="upper right", fontsize=8, markerscale=3)
    latency.set_ylabel("send latency (ms)")

    _draw_roles(roles, timeline)
    roles.set_xlabel("seconds since the run started")
    roles.set_xlim(0, max(timeline.end_s, 0.1))

    colours = {w.id: _FAULT_COLOURS[i % len(_FAULT_COLOURS)] for i, w in enumerate(timeline.faults)}
    for axes in (rate, latency, roles):
        for window in timeline.faults:
            axes.axvspan(
                window.start_s, window.end_s, color=colours[window.id], alpha=0.15, lw=0, zorder=0
            )
        axes.grid(axis="x", alpha=0.3)
    for i, window in enumerate(timeline.faults):
        rate.annotate(
            window.label,
            xy=(window.start_s, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(2, -3 - 11 * (i % _FAULT_LABEL_ROWS)),
            textcoords="offset points",
            fontsize=8,
            va="top",
            ha="left",
            color=colours[window.id],
            fontweight="bold",
            annotation_clip=True,
        )
    for axes in (rate, latency):
        axes.tick_params(labelbottom=False)

    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=_DPI)
    return out.getvalue()


def _draw_roles(axes: Any, timeline: Timeline) -> None:
    labels = ["master", *timeline.nodes]
    y_of = {label: len(labels) - 1 - i for i, label in enumerate(labels)}
    node_colours = {n: f"C{i % 10}" for i, n in enumerate(timeline.nodes)}
    for seg in timeline.masters():
        axes.broken_barh(
            [(seg.start_s, seg.end_s - seg.start_s)],
            (y_of["master"] - 0.4, 0.8),
            facecolors=node_colours.get(seg.node, "grey"),
            zorder=2,
        )
        axes.text(
            (seg.start_s + seg.end_s) / 2,
            y_of["master"],
            seg.node,
            fontsize=8,
            ha="center",
            va="center",
            color="white",
            clip_on=True,
        )
    for start, end in _two_master_spans(timeline.masters()):
        axes.broken_barh(
            [(start, end - start)],
            (y_of["master"] - 0.45, 0.9),
            facecolors="none",
            zorder=3,
            edgecolors="red",
            linewidth=2,
            hatch="//",
        )
    seen_roles: dict[str, None] = {}
    for seg in timeline.roles:
        if seg.node not in y_of:
            continue
        colour = _ROLE_COLOURS.get(seg.role, "#bbbbbb")
        axes.broken_barh(
            [(seg.start_s, seg.end_s - seg.start_s)],
            (y_of[seg.node] - 0.35, 0.7),
            facecolors=colour,
            zorder=2,
            edgecolors="#555555" if seg.role == "DOWN" else "none",
            linewidth=0.5,
            label=None if seg.role in seen_roles else seg.role,
        )
        seen_roles.setdefault(seg.role, None)
    axes.set_yticks([y_of[label] for label in labels], labels)
    axes.set_ylim(-0.6, len(labels) - 0.4)
    if seen_roles:
        axes.legend(
            loc="lower right",
            bbox_to_anchor=(1.0, 1.0),
            fontsize=7,
            ncol=len(seen_roles),
            frameon=False,
            borderaxespad=0.1,
        )
