"""The workload as part of what a guided campaign draws and mutates: many HA bugs show only
while replicas lag, and what makes them lag is the load — how fast producers send, how many
messages each keeps in flight, how big they are, whether consumers keep up or leave the
queue to grow until the end.

    draw_workload(base, rng)     a fresh workload within BOUNDS (the scenario's own, sometimes)
    draw_heavy_workload(base, rng)  the heaviest of a few drawn: replicas that must carry more
                                 fall further behind under a slow link
    mutate_workload(w, rng)      one knob moved (the next value up or down, or any other)
    workload_problem(w)          why a workload is outside what a run can afford here, or None

The bounds keep a run affordable on a two-core machine that also runs three nodes, Toxiproxy
and the clients: at most MAX_MESSAGES_S messages a second and MAX_BYTES_S bytes a second in
all. The load's length is never drawn (the campaign's budget counts on it), nor the settings
that say how clients reach the cluster (virtual address, heartbeat, side queue).
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from lab.ground.spec import Workload

__all__ = [
    "BOUNDS",
    "KNOBS",
    "MAX_BYTES_S",
    "MAX_MESSAGES_S",
    "draw_heavy_workload",
    "draw_workload",
    "mutate_workload",
    "workload_problem",
]

# Each knob's values, in order (a mutation moves to a neighbour more often than not).
BOUNDS: dict[str, tuple[object, ...]] = {
    "producers": (1, 2, 3, 4),
    "consumers": (1, 2, 3),
    "rate": (25.0, 50.0, 100.0, 150.0, 200.0),  # messages a second, each producer
    "window": (1, 4, 16, 64, 100, 200),  # messages in flight, each producer
    "size": (100, 1024, 8192, 32768),  # bytes a message
    "consume_during_load": (True, False),  # False: consumers only drain at the end
    "spread_producers": (False, True),  # producer p<i> tries node n<i> first
}
KNOBS = tuple(BOUNDS)
MAX_MESSAGES_S = 500.0
MAX_BYTES_S = 2 * 1024 * 1024
KEEP_OWN = 0.25  # how often a fresh draw keeps the scenario's own workload
NEIGHBOUR = 0.7  # how often a mutation moves a knob to a neighbouring value


def workload_problem(workload: Workload) -> str | None:
    for knob, values in BOUNDS.items():
        if getattr(workload, knob) not in values:
            return f"workload.{knob} {getattr(workload, knob)!r} is not one of {values}"
    messages = workload.producers * workload.rate
    if messages > MAX_MESSAGES_S:
        return f"{messages:g} messages/s in all (at most {MAX_MESSAGES_S:g})"
    if messages * workload.size > MAX_BYTES_S:
        return f"{messages * workload.size / 1024:.0f} KiB/s in all (at most {MAX_BYTES_S // 1024})"
    return None


def _with(workload: Workload, knob: str, value: object) -> Workload:
    fields: dict[str, Any] = {knob: value}
    return replace(workload, **fields)


def draw_workload(base: Workload, rng: random.Random) -> Workload:
    """A workload drawn knob by knob within BOUNDS (tried again until it is affordable); the
    scenario's own `base` KEEP_OWN of the time."""
    if rng.random() < KEEP_OWN and workload_problem(base) is None:
        return base
    while True:
        drawn = base
        for knob, values in BOUNDS.items():
            drawn = _with(drawn, knob, rng.choice(values))
        if workload_problem(drawn) is None:
            return drawn


HEAVY_DRAWS = 4


def _weight(workload: Workload) -> float:
    """Bytes a second in all, doubled when consumers leave the queue to grow."""
    grows = 2.0 if not workload.consume_during_load else 1.0
    return workload.producers * workload.rate * workload.size * grows


def draw_heavy_workload(base: Workload, rng: random.Random) -> Workload:
    """The heaviest of HEAVY_DRAWS workloads drawn within BOUNDS (never the scenario's own)."""
    drawn = []
    for _ in range(HEAVY_DRAWS):
        while True:
            candidate = base
            for knob, values in BOUNDS.items():
                candidate = _with(candidate, knob, rng.choice(values))
            if workload_problem(candidate) is None:
                drawn.append(candidate)
                break
    return max(drawn, key=_weight)


def mutate_workload(workload: Workload, rng: random.Random) -> Workload | None:
    """One knob moved to another of its values; None when no move keeps it affordable."""
    knobs = list(KNOBS)
    rng.shuffle(knobs)
    for knob in knobs:
        values = BOUNDS[knob]
        now = getattr(workload, knob)
        at = values.index(now) if now in values else 0
        if rng.random() < NEIGHBOUR:
            moves = [values[i] for i in (at - 1, at + 1) if 0 <= i < len(values)]
        else:
            moves = [v for v in values if v != now]
        rng.shuffle(moves)
        for value in moves:
            moved = _with(workload, knob, value)
            if value != now and workload_problem(moved) is None:
                return moved
    return None
