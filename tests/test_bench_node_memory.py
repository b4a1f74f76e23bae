"""The node-memory benchmark's parts that need no cluster: reading a process's memory from
/proc, and waiting on the load's counts (it gives up, saying where, when they stall)."""

from __future__ import annotations

import os

import pytest

from lab.bench import node_memory
from lab.bench.node_memory import memory_kib
from lab.ground.errors import LabError


def test_memory_is_read_from_proc() -> None:
    rss, peak = memory_kib(os.getpid()), memory_kib(os.getpid(), "VmHWM")
    assert 0 < rss <= peak
    with pytest.raises(LabError, match="no VmNothing for process"):
        memory_kib(os.getpid(), "VmNothing")


def test_waiting_for_messages_returns_the_count_or_names_a_stall(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(node_memory.time, "sleep", lambda _s: None)
    counts = iter([0, 50, 120, 400])
    received = node_memory._received_at_least(lambda: {"received": next(counts)}, 100)
    assert received == 120
    clock = iter(range(0, 1000, 30))
    monkeypatch.setattr(node_memory.time, "monotonic", lambda: float(next(clock)))
    with pytest.raises(LabError, match="received nothing for 60 s \\(at 7\\)"):
        node_memory._received_at_least(lambda: {"received": 7}, 100)
