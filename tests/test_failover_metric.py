"""The failover figure (`failover_s` in result.json): per fault, seconds from its start to the
next acknowledged send, whoever serves it. A node a fault took out counts again once it is
back, so a single node killed and restarted has a failover time, not "never"."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lab.judge.metrics import run_metrics

NS = 1_000_000_000


def _history(rows: list[tuple[float, str]]) -> pa.Table:
    """Acknowledged sends: (time s, node)."""
    return pa.table(
        {
            "time": [int(t * NS) for t, _ in rows],
            "process": ["p1"] * len(rows),
            "type": ["ok"] * len(rows),
            "f": ["send"] * len(rows),
            "value": [f"p1-{i}" for i in range(len(rows))],
            "node": [n for _, n in rows],
        }
    )


def _event(time_s: float, kind: str, node: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "time": int(time_s * NS), "kind": kind, "node": node, **fields}


def _single_node_crash(restarted_s: float | None) -> list[dict[str, Any]]:
    """The events of a `single-node-crash` run as the lab writes them (seed 1 on this
    machine): n1 killed at 5.466 s, restarted at `restarted_s` (None: never)."""
    events = [
        _event(0.078, "node.start", "n1", pid=9354),
        _event(0.626, "node.role", "n1", previous="WAITING", role="MASTER"),
        _event(0.697, "workload.phase", phase="load"),
        _event(5.466, "fault.start", id="f1", fault="kill", target="n1", params={}),
        _event(5.476, "node.kill", "n1", signal="SIGKILL"),
    ]
    if restarted_s is not None:
        events += [
            _event(restarted_s, "node.start", "n1", pid=9534),
            _event(restarted_s, "fault.end", id="f1", fault="kill", target="n1"),
            _event(restarted_s + 0.512, "node.role", "n1", previous="WAITING", role="MASTER"),
        ]
    return [*events, _event(13.358, "workload.phase", phase="heal")]


def test_a_single_node_killed_and_restarted_fails_over_to_itself() -> None:
    # An acknowledgement in flight when the kill began (5.470 s) is no failover; the first
    # one after the restart (8.861 s) is.
    history = _history([(5.0, "n1"), (5.47, "n1"), (8.861, "n1"), (9.0, "n1")])
    metrics = run_metrics(history, _single_node_crash(restarted_s=8.188))
    assert metrics.failover_s == (3.395,)
    # the failover ends the unavailable window the kill opened
    assert (5.47, 8.861) in [(w.start_s, w.end_s) for w in metrics.unavailable_windows]


def test_a_node_acknowledging_after_its_restart_before_the_heal_returns_counts() -> None:
    """The heal (`fault.end`) may return after the node already serves: its start counts."""
    events = _single_node_crash(restarted_s=None)
    events.insert(-1, _event(7.85, "node.start", "n1"))
    events.insert(-1, _event(8.2, "fault.end", id="f1", fault="kill", target="n1"))
    metrics = run_metrics(_history([(5.47, "n1"), (8.0, "n1")]), events)
    assert metrics.failover_s == (2.534,)


def test_a_node_never_back_never_fails_over_to_itself() -> None:
    metrics = run_metrics(_history([(5.47, "n1"), (9.0, "n1")]), _single_node_crash(None))
    assert metrics.failover_s == (None,)


def test_a_refused_heal_leaves_the_node_out() -> None:
    events = _single_node_crash(restarted_s=None)
    events.insert(-1, _event(8.0, "fault.end", id="f1", fault="kill", error="no", refused=True))
    metrics = run_metrics(_history([(9.0, "n1")]), events)
    assert metrics.failover_s == (None,)


def test_whoever_serves_first_ends_the_failover() -> None:
    """A master paused and resumed before another node is elected serves again first; a
    master killed while another is elected fails over to the other."""
    events = [
        _event(0.0, "node.start", "n1"),
        _event(0.0, "node.start", "n2"),
        _event(0.5, "workload.phase", phase="load"),
        _event(2.0, "fault.start", id="f1", fault="pause", target="n1"),
        _event(2.01, "node.pause", "n1"),
        _event(3.0, "node.resume", "n1"),
        _event(3.0, "fault.end", id="f1", fault="pause", target="n1"),
        _event(5.0, "fault.start", id="f2", fault="kill", target="n1"),
        _event(7.0, "fault.start", id="f3", fault="delay", target="client_to_n2"),
        _event(9.0, "workload.phase", phase="heal"),
    ]
    sends = [(1.0, "n1"), (2.005, "n1"), (3.25, "n1"), (5.1, "n1"), (6.4, "n2"), (7.3, "n2")]
    metrics = run_metrics(_history(sends), events)
    assert metrics.failover_s == (1.25, 1.4, 0.3)
