"""A schedule as fault windows — a fault from its start to its heal — and the smaller
schedules a shrink tries: fewer windows, shorter ones, overlaps moved apart, roles
replaced by the nodes they resolved to, a shorter load.

    windows = windows_of(spec.schedule)
    schedule_of(windows) → the operations again, in canonical order
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from lab.ground.faultops import FaultOp, ParamValue, canonical

__all__ = [
    "MIN_WINDOW_S",
    "Window",
    "apart",
    "halved",
    "resolved_targets",
    "schedule_of",
    "windows_of",
    "with_roles_resolved",
]

MIN_WINDOW_S = 0.2  # a window is not shortened below this


@dataclass(frozen=True)
class Window:
    id: str
    fault: str
    target: str
    start_s: float
    end_s: float | None  # None: never healed; a window that waits: the latest its heal comes
    params: Mapping[str, ParamValue] = field(default_factory=dict)
    when: str | None = None  # the trigger it waits for from start_s (lab.ground.faultops)
    within_s: float = 0.0  # how long it waits at most

    @property
    def length_s(self) -> float | None:
        return None if self.end_s is None else self.end_s - self.start_s

    def ops(self) -> tuple[FaultOp, ...]:
        start = FaultOp(
            self.start_s,
            "start",
            self.fault,
            self.target,
            self.id,
            self.params,
            when=self.when,
            within_s=self.within_s if self.when is not None else 0.0,
        )
        if self.end_s is None:
            return (start,)
        if self.when is None:
            return (start, replace(start, at_s=self.end_s, action="stop"))
        after = max(0.0, round(self.end_s - self.start_s - self.within_s, 3))
        stop = FaultOp(
            self.start_s + self.within_s + after,
            "stop",
            self.fault,
            self.target,
            self.id,
            self.params,
            after_s=after,
        )
        return (start, stop)

    def __str__(self) -> str:
        until = "" if self.end_s is None else f"–{self.end_s:g}"
        waits = "" if self.when is None else f" when {self.when} (within {self.within_s:g} s)"
        return f"{self.id} {self.fault} {self.target} {self.start_s:g}{until} s{waits}"


def windows_of(schedule: Sequence[FaultOp]) -> list[Window]:
    """The schedule's windows, in the order their faults start."""
    starts = [op for op in schedule if op.action == "start"]
    stops = {op.id: op for op in schedule if op.action == "stop"}
    return [
        Window(
            op.id,
            op.fault,
            op.target,
            op.at_s,
            stops[op.id].at_s if op.id in stops else None,
            dict(op.params),
            op.when,
            op.within_s,
        )
        for op in sorted(starts, key=lambda o: (o.at_s, o.id))
    ]


def schedule_of(windows: Sequence[Window]) -> tuple[FaultOp, ...]:
    return canonical(tuple(op for w in windows for op in w.ops()))


def resolved_targets(run_folder: Path) -> dict[str, str]:
    """Each fault's target as applied in the run (a role such as @master resolved to the
    node it named then), from schedule.jsonl; only faults that named a role."""
    found: dict[str, str] = {}
    path = run_folder / "schedule.jsonl"
    if not path.is_file():
        return found
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line
        if (
            entry.get("phase") == "applied"
            and entry.get("action") == "start"
            and entry.get("ok")
            and str(entry.get("planned_target", "")).count("@")
        ):
            found[str(entry["id"])] = str(entry["target"])
    return found


def with_roles_resolved(windows: Sequence[Window], resolved: Mapping[str, str]) -> list[Window]:
    return [replace(w, target=resolved.get(w.id, w.target)) for w in windows]


def halved(window: Window) -> Window | None:
    """The window half as long (its start kept), or None when it cannot be shorter."""
    length = window.length_s
    if length is None or length / 2 < MIN_WINDOW_S:
        return None
    return replace(window, end_s=round(window.start_s + length / 2, 3))


def apart(windows: Sequence[Window], index: int) -> list[Window] | None:
    """Window `index` moved later, to start when the windows it overlaps have ended (its
    length kept), or None when it overlaps none or never ends."""
    moved = windows[index]
    earlier = [
        w
        for i, w in enumerate(windows)
        if i != index
        and w.start_s <= moved.start_s
        and (w.end_s is None or w.end_s > moved.start_s)
    ]
    if not earlier or moved.end_s is None or any(w.end_s is None for w in earlier):
        return None
    shift = max(w.end_s or 0.0 for w in earlier) + 0.5 - moved.start_s
    later = replace(
        moved, start_s=round(moved.start_s + shift, 3), end_s=round(moved.end_s + shift, 3)
    )
    return [later if i == index else w for i, w in enumerate(windows)]
