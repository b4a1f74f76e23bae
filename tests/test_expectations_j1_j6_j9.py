"""J1, J6 and J9's expectations on synthetic runs: the election against the transaction ids
read at the kill, sends in flight at the master's kill, acknowledgements after a transfer;
and the nemesis recording those ids around a kill."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from test_predictions import _metrics

from faults.nemesis import Nemesis
from lab.ground.errors import ClusterError
from lab.ground.faultops import FaultOp
from lab.ground.nodes import NodeStatus, TargetTraits
from lab.judge.checker import CheckResult, IdSet
from lab.judge.expectations import UNCHECKABLE
from lab.judge.facts import RunFacts
from lab.judge.j_expectations import (
    AcknowledgedByNewMaster,
    ElectedMostRecent,
    InFlightSendsSettled,
    send_ops,
)
from lab.judge.metrics import read_operations
from lab.judge.prediction import Prediction
from lab.judge.result import judge_run
from scenarios.replicated_group import TRANSFER_MASTER

NS = 1_000_000_000


def _event(time_s: float, kind: str, node: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "time": int(time_s * NS), "kind": kind, "node": node, **fields}


def _check() -> CheckResult:
    none = IdSet(0, ())
    return CheckResult(True, 100, 100, 0, 0, 100, none, none, none, none, none, 0)


def _kill(fault_id: str = "f1", target: str = "n1", at: float = 5.0) -> list[dict[str, Any]]:
    return [
        _event(at, "fault.start", id=fault_id, fault="kill", target=target),
        _event(at + 0.01, "node.kill", target),
        _event(at + 4.0, "fault.end", id=fault_id, fault="kill", target=target),
    ]


def _txids(moment: str, ids: Mapping[str, int], fault_id: str = "f1") -> list[dict[str, Any]]:
    return [
        _event(5.02, "node.txid", n, fault=fault_id, moment=moment, txid=t) for n, t in ids.items()
    ]


def _history(tmp_path: Path, ops: list[tuple[float, str, str, str, str | None, str | None]]) -> Any:
    """(time s, process, type, f, value, node) rows as history.jsonl, read back as the judge
    reads it."""
    path = tmp_path / "history.jsonl"
    lines = []
    for i, (t, process, type_, f, value, node) in enumerate(ops):
        row: dict[str, Any] = {"index": i, "time": int(t * NS), "process": process}
        row |= {"type": type_, "f": f, "value": value}
        if node is not None:
            row["node"] = node
        lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n")
    return read_operations(path)


def _facts(events: list[dict[str, Any]], history: pa.Table | None = None) -> RunFacts:
    return RunFacts.gather(events, _metrics(), history=history)


# ---- J1: the election against the transaction ids at the kill ----------------------------

ELECTED_N2 = [_event(5.9, "node.role", "n2", role="MASTER", previous="REPLICA")]
ELECTED_N3 = [_event(5.9, "node.role", "n3", role="MASTER", previous="REPLICA")]
BEFORE = _txids("before", {"n1": 120, "n2": 118, "n3": 117})


@pytest.mark.parametrize(
    ("at_kill", "elected", "met"),
    [
        ({"n2": 120, "n3": 119}, ELECTED_N2, True),
        ({"n2": 120, "n3": 120}, ELECTED_N3, True),  # a tie: one with the most recent
        ({"n2": 120, "n3": 119}, ELECTED_N3, False),
    ],
)
def test_the_elected_node_held_the_most_recent_transaction(
    at_kill: dict[str, int], elected: list[dict[str, Any]], met: bool
) -> None:
    events = _kill() + BEFORE + _txids("after", at_kill) + elected
    reason = ElectedMostRecent("f1").unmet(_facts(events))
    assert (reason is None) is met
    if not met:
        assert reason is not None and "n3 was elected holding transaction 119" in reason
        assert "n2 held 120" in reason


def test_the_killed_node_coming_back_as_master_is_no_survivor_elected() -> None:
    back = [_event(9.5, "node.role", "n1", role="MASTER", previous="REPLICA")]
    events = _kill() + _txids("after", {"n2": 5, "n3": 5}) + back
    reason = ElectedMostRecent("f1").unmet(_facts(events))
    assert reason is not None and "no survivor was elected" in reason


def test_no_master_after_the_kill_is_a_reason() -> None:
    reason = ElectedMostRecent("f1").unmet(_facts(_kill() + _txids("after", {"n2": 5})))
    assert reason == "no node became MASTER after f1:start"


def test_without_transaction_ids_the_election_cannot_be_checked() -> None:
    prediction = Prediction(text="t", expect=(ElectedMostRecent("f1"),))
    events = _kill() + ELECTED_N2
    verdict = prediction.judge(_check(), events, _metrics(), TargetTraits("qpid-broker-j"))
    assert verdict.outcome == "unknown"
    assert verdict.reasons[0].startswith(UNCHECKABLE)
    behind = prediction.judge(_check(), events + _txids("after", {"n2": 3, "n3": 4}), _metrics())
    assert behind.outcome == "broken" and behind.violations == ("elected-behind",)


class _Events:
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        self.seen.append({"kind": kind, "node": node, **fields})


class _Group:
    """Three nodes whose last transaction ids advance as they are read; n3 reports none."""

    def __init__(self, failing: bool = False) -> None:
        self.txid = 100
        self.dead: set[str] = set()
        self.failing = failing

    @property
    def node_names(self) -> tuple[str, ...]:
        return ("n1", "n2", "n3")

    def roles(self) -> dict[str, str | None]:
        return {"n1": "MASTER", "n2": "REPLICA", "n3": "REPLICA"}

    def statuses(self) -> dict[str, NodeStatus | None]:
        if self.failing:
            raise ClusterError("no answer")
        self.txid += 1
        return {
            "n1": None if "n1" in self.dead else NodeStatus("n1", "MASTER", self.txid),
            "n2": NodeStatus("n2", "REPLICA", self.txid - 1),
            "n3": NodeStatus("n3", "REPLICA", -1),  # Broker-J's: environment not open
        }

    def kill(self, name: str) -> None:
        self.dead.add(name)

    def restart(self, name: str) -> None:
        self.dead.discard(name)

    def pause(self, name: str) -> None:
        return None

    def resume(self, name: str) -> None:
        return None


def _run(group: _Group, fault: str) -> list[dict[str, Any]]:
    events = _Events()
    with Nemesis(group, events=events) as nemesis:
        nemesis.apply(FaultOp(1.0, "start", fault, "@master", "f1"))
        nemesis.apply(FaultOp(2.0, "stop", fault, "@master", "f1"))
    return [e for e in events.seen if e["kind"] == "node.txid"]


def test_the_nemesis_reads_transaction_ids_around_a_kill_only() -> None:
    seen = _run(_Group(), "kill")
    assert [(e["node"], e["moment"], e["txid"]) for e in seen] == [
        ("n1", "before", 101),
        ("n2", "before", 100),
        ("n2", "after", 101),  # the killed node no longer answers; n3's -1 is no answer
    ]
    assert {e["fault"] for e in seen} == {"f1"}
    assert _run(_Group(), "pause") == []
    assert _run(_Group(failing=True), "kill") == []


def test_kills_at_one_moment_strike_together_without_readings_between() -> None:
    """A total failure's kills fall at one moment: no node is read between them (reading
    spread them by tens of milliseconds, time enough for a manager to promote a victim)."""
    events = _Events()
    together = (
        FaultOp(0.0, "start", "kill", "n1", "f1"),
        FaultOp(0.0, "start", "kill", "n2", "f2"),
        FaultOp(0.5, "start", "kill", "n3", "f3"),
    )
    with Nemesis(_Group(), events=events) as nemesis:
        nemesis.run(together, started_at_ns=time.monotonic_ns())
    readings = [e for e in events.seen if e["kind"] == "node.txid"]
    assert {e["fault"] for e in readings} == {"f3"}  # the kill alone at its moment is read


# ---- J6: sends in flight at the master's kill -------------------------------------------


def _in_flight_history(tmp_path: Path, outcome: str, received: bool) -> pa.Table:
    rows: list[tuple[float, str, str, str, str | None, str | None]] = [
        (4.0, "p1", "invoke", "send", "p1-1", "n1"),
        (4.1, "p1", "ok", "send", "p1-1", "n1"),  # done before the kill
        (5.0, "p1", "invoke", "send", "p1-2", "n1"),  # in flight at the kill (5.01)
        (5.5, "p1", outcome, "send", "p1-2", "n2"),
        (5.006, "p2", "invoke", "send", "p2-1", "n1"),  # in flight, never completed
        (6.0, "c1", "ok", "receive", "p1-1", "n2"),
    ]
    if received:
        rows.append((6.1, "c1", "ok", "receive", "p1-2", "n2"))
    return _history(tmp_path, rows)


@pytest.mark.parametrize(
    ("outcome", "received", "met"),
    [("info", False, True), ("fail", False, True), ("ok", True, True), ("ok", False, False)],
)
def test_sends_in_flight_at_the_kill_are_not_acknowledged_then_lost(
    tmp_path: Path, outcome: str, received: bool, met: bool
) -> None:
    facts = _facts(_kill("f2"), _in_flight_history(tmp_path, outcome, received))
    reason = InFlightSendsSettled("f2").unmet(facts)
    assert (reason is None) is met
    if not met:
        assert reason is not None and "1 of the 2 send(s) in flight" in reason
        assert "p1-2" in reason


def test_a_send_settled_before_the_kill_was_recorded_was_still_in_flight(
    tmp_path: Path,
) -> None:
    """The clients see the connection drop before the lab records the node's death: a send
    completed after the lab's last reading before the kill was in flight at the kill."""
    events = [*_kill("f2"), _event(5.002, "node.txid", "n1", fault="f2", moment="before", txid=9)]
    for outcome, met in (("info", True), ("ok", False)):
        rows: list[tuple[float, str, str, str, str | None, str | None]] = [
            (4.99, "p1", "invoke", "send", "p1-7", "n1"),
            (5.005, "p1", outcome, "send", "p1-7", "n1"),
        ]
        reason = InFlightSendsSettled("f2").unmet(_facts(events, _history(tmp_path, rows)))
        assert (reason is None) is met
        assert met or (reason is not None and "1 of the 1 send(s)" in reason)


def test_sends_are_paired_invoke_to_completion(tmp_path: Path) -> None:
    history = _in_flight_history(tmp_path, "info", False)
    sends = send_ops(_facts([], history))
    assert sends is not None
    assert [(s.value, s.outcome, s.node) for s in sends] == [
        ("p1-1", "ok", "n1"),
        ("p1-2", "info", "n2"),
        ("p2-1", None, None),
    ]
    assert [s.in_flight_at(5.01) for s in sends] == [False, True, True]


def test_in_flight_sends_without_a_history_cannot_be_checked() -> None:
    reason = InFlightSendsSettled("f2").unmet(_facts(_kill("f2")))
    assert reason is not None and reason.startswith(UNCHECKABLE)


# ---- J9: acknowledgements after a transfer ------------------------------------------------

TRANSFER = [
    _event(5.0, "fault.start", id="f1", fault="transfer_master", target="n2"),
    _event(5.3, "node.role", "n1", role="REPLICA", previous="MASTER"),
    _event(5.4, "node.role", "n2", role="MASTER", previous="REPLICA"),
    _event(7.0, "fault.end", id="f1", fault="transfer_master", target="n2"),
]


def _transfer_history(tmp_path: Path, late_node: str | None, nodes: bool = True) -> pa.Table:
    rows: list[tuple[float, str, str, str, str | None, str | None]] = [
        (5.1, "p1", "invoke", "send", "p1-1", "n1"),
        (5.2, "p1", "ok", "send", "p1-1", "n1"),  # before the transfer: the old master
        (5.25, "p1", "invoke", "send", "p1-2", "n1"),  # in flight at the step-down
        (5.45, "p1", "info", "send", "p1-2", "n1"),
        (5.6, "p1", "invoke", "send", "p1-2", "n2"),  # re-sent to the new master
        (5.7, "p1", "ok", "send", "p1-2", "n2"),
        (5.8, "p2", "invoke", "send", "p2-1", late_node),
        (5.9, "p2", "ok", "send", "p2-1", late_node),
    ]
    if not nodes:
        rows = [(t, p, ty, f, v, None) for t, p, ty, f, v, _ in rows]
    return _history(tmp_path, rows)


def test_after_the_transfer_only_the_new_master_acknowledges(tmp_path: Path) -> None:
    expect = AcknowledgedByNewMaster("f1", after="f1:start")
    assert expect.unmet(_facts(TRANSFER, _transfer_history(tmp_path, "n2"))) is None
    reason = expect.unmet(_facts(TRANSFER, _transfer_history(tmp_path, "n1")))
    assert reason is not None
    assert "1 send(s) invoked after the transfer acknowledged by n1" in reason
    assert "1 of 1 send(s) in flight then ended fail or info (1 re-sent" in reason


def test_a_send_the_old_master_committed_before_it_stepped_down_may_come_back_ok(
    tmp_path: Path,
) -> None:
    """A send in flight at the step-down whose acknowledgement from the old master reaches
    the client just after it (committed before the transfer: seen in real runs, 0–10 ms
    after the lab saw the step-down) is not a suspended transaction; a send invoked after
    the step-down and acknowledged by the old master is."""
    history = _transfer_history(tmp_path, "n2")
    rows = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    late = {"index": 0, "time": int(5.32 * NS), "process": "p1", "type": "ok", "f": "send"}
    rows.insert(3, late | {"value": "p1-2", "node": "n1"})  # p1-2's first completion: ok
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    expect = AcknowledgedByNewMaster("f1", after="f1:start")
    assert expect.unmet(_facts(TRANSFER, history)) is None
    assert expect.unmet(_facts(TRANSFER, read_operations(tmp_path / "history.jsonl"))) is None
    invoked_late = {"index": 0, "time": int(5.31 * NS), "process": "p3", "f": "send"}
    rows.insert(3, invoked_late | {"type": "invoke", "value": "p3-1", "node": "n1"})
    rows.insert(5, invoked_late | {"type": "ok", "value": "p3-1", "node": "n1"})
    rows[5]["time"] = int(5.35 * NS)
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    reason = expect.unmet(_facts(TRANSFER, read_operations(tmp_path / "history.jsonl")))
    assert reason is not None and "acknowledged by n1" in reason and "p3-1 at 5.35" in reason


def test_no_acknowledgement_from_the_new_master_is_a_reason(tmp_path: Path) -> None:
    history = _history(
        tmp_path,
        [(5.1, "p1", "invoke", "send", "p1-1", "n1"), (5.2, "p1", "ok", "send", "p1-1", "n1")],
    )
    reason = AcknowledgedByNewMaster("f1", after="f1:start").unmet(_facts(TRANSFER, history))
    assert reason is not None and reason.startswith("no send was acknowledged by n2")


def test_a_transfer_that_never_took_effect_or_a_history_without_nodes(tmp_path: Path) -> None:
    expect = AcknowledgedByNewMaster("f1", after="f1:start")
    never = expect.unmet(_facts(TRANSFER[:2] + TRANSFER[3:], _transfer_history(tmp_path, "n2")))
    assert never == "n2 (f1) never became MASTER after f1:start"
    blind = expect.unmet(_facts(TRANSFER, _transfer_history(tmp_path, "n2", nodes=False)))
    assert blind is not None and blind.startswith(UNCHECKABLE)


def test_the_judge_reads_the_run_folders_history(tmp_path: Path) -> None:
    """judge_run hands the history to the expectations: a late acknowledgement by the old
    master breaks transfer-master's prediction."""
    _transfer_history(tmp_path, "n1")
    rows = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    tail = [(6.0, "c1", "ok", "receive", v) for v in ("p1-1", "p1-2", "p2-1")] + [
        (15.0, "c1", "invoke", "drain", None),
        (15.5, "c1", "ok", "drain", None),
    ]
    for t, process, type_, f, value in tail:
        rows.append(
            {"index": len(rows), "time": int(t * NS), "process": process, "type": type_}
            | {"f": f, "value": value}
        )
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    roles = [_event(16.0, "node.status", "n2", role="MASTER")]
    roles.append(_event(16.0, "node.status", "n1", role="REPLICA"))
    start = [_event(1.0, "workload.phase", phase="load")]
    events = [
        {**e, "roles": {"n1": "MASTER"}} if e["kind"] == "fault.start" else e for e in TRANSFER
    ]
    (tmp_path / "events.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in start + events + roles)
    )
    judgement = judge_run(
        tmp_path / "history.jsonl",
        tmp_path / "events.jsonl",
        TRANSFER_MASTER.prediction,
        TargetTraits(),
    )
    assert judgement.verdict.outcome == "broken"
    assert judgement.verdict.violations == ("acknowledged-by-old-master",)
