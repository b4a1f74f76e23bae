"""`@master` in a step when there is no master at that moment: the nemesis waits for an
election, then skips the step (recorded, and said in a `fault.skipped` event), the run goes
on, and the verdict is `unknown` unless something else broke the prediction."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from faults.fault import NoFault
from faults.nemesis import Nemesis
from lab.api import Prediction, RoleAtEnd, Scenario, Topology, Workload, fault_window, scheduled
from lab.judge.checker import CheckResult, IdSet
from lab.judge.metrics import run_metrics
from lab.run.runner import RunOutcome

NS = 1_000_000_000


class _Group:
    """A cluster whose nodes answer with fixed roles; the faults it took, in order."""

    def __init__(self, roles: dict[str, str | None]) -> None:
        self._roles = roles
        self.node_names = tuple(roles)

    def roles(self) -> dict[str, str | None]:
        return dict(self._roles)


class _Recorded:
    def __init__(self) -> None:
        self.emitted: list[dict[str, Any]] = []

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        self.emitted.append({"kind": kind, "node": node, **fields})


def test_a_step_whose_master_is_missing_is_skipped_and_the_schedule_goes_on() -> None:
    group = _Group({"n1": "REPLICA", "n2": None, "n3": "REPLICA"})
    logged: list[dict[str, Any]] = []
    events = _Recorded()
    changes: list[str] = []
    schedule = (
        *fault_window("noop", "@master", 0.0, 0.0, "f1"),
        *fault_window("noop", "n3", 0.0, 0.0, "f2"),
    )
    with Nemesis(
        group,
        faults={"noop": NoFault()},
        events=events,
        log=logged.append,
        on_change=lambda what, op: changes.append(f"{op.id} {what}"),
        selector_wait_s=0.1,
    ) as nemesis:
        nemesis.run(schedule, started_at_ns=0)
    steps = [(e["id"], e["action"], e["ok"], e.get("error", "")) for e in logged]
    why = "fault f1: cannot resolve @master: 0 masters (n1=REPLICA, n2=no answer, n3=REPLICA)"
    assert steps[0] == ("f1", "start", False, f"{why} after waiting 0.1 s")
    assert ("f1", "stop", False, "not applied") in steps  # nothing to heal
    assert [(i, a, ok) for i, a, ok, _ in steps if i == "f2"] == [
        ("f2", "start", True),
        ("f2", "stop", True),
    ]
    skipped = [e for e in events.emitted if e["kind"] == "fault.skipped"]
    assert skipped == [
        {
            "kind": "fault.skipped",
            "node": None,
            "id": "f1",
            "fault": "noop",
            "target": "@master",
            "error": f"{why} after waiting 0.1 s",
        }
    ]
    assert "f1 skipped" in changes and "f2 applied" in changes
    assert nemesis.applied == 1


def _event(time_s: float, kind: str, node: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "time": int(time_s * NS), "kind": kind, "node": node, **fields}


WHY = "fault f1: cannot resolve @master: 0 masters (n1=no answer) after waiting 5 s"
EVENTS = [
    _event(0.1, "node.start", "n1"),
    _event(0.5, "workload.phase", phase="load"),
    _event(1.0, "fault.start", id="f0", fault="kill", target="n1"),
    _event(6.5, "fault.skipped", id="f1", fault="kill", target="@master", error=WHY),
    _event(8.0, "workload.phase", phase="heal"),
    _event(9.0, "node.status", "n1", role="MASTER"),
]
HISTORY = pa.table(
    {
        "time": [int(0.6 * NS)],
        "process": ["p1"],
        "type": ["ok"],
        "f": ["send"],
        "value": ["p1-0"],
        "node": ["n1"],
    }
)


def _check(lost: int = 0) -> CheckResult:
    def ids(n: int) -> IdSet:
        return IdSet(n, tuple(f"p1-{i}" for i in range(n)))

    return CheckResult(
        valid=not lost,
        attempted=10,
        acknowledged=10,
        failed=0,
        indeterminate=0,
        received=10 - lost,
        lost=ids(lost),
        unexpected=ids(0),
        resurrected=ids(0),
        recovered=ids(0),
        duplicated=ids(0),
        duplicate_deliveries=0,
    )


def test_a_skipped_fault_leaves_the_prediction_untested() -> None:
    prediction = Prediction("nothing lost; f1's node back", expect=(RoleAtEnd("f1", "MASTER"),))
    verdict = prediction.judge(_check(), EVENTS, run_metrics(HISTORY, EVENTS))
    assert verdict.outcome == "unknown"
    assert verdict.reasons == (f"cannot be checked: {WHY}, so f1 was not applied",)
    assert verdict.violations == ("uncheckable",)


def test_a_skipped_fault_beside_a_loss_is_a_broken_prediction() -> None:
    verdict = Prediction("nothing lost").judge(_check(lost=2), EVENTS, run_metrics(HISTORY, EVENTS))
    assert verdict.outcome == "broken"
    assert verdict.violations == ("fault-not-applied", "lost")


ALONE = Scenario(
    name="no-master-to-kill",
    summary="one node killed, and while it is down a kill of @master",
    prediction=Prediction("nothing acknowledged is lost"),
    schedule=scheduled(
        fault_window("kill", "n1", 1.0, 3.0, "f1"),
        fault_window("kill", "@master", 1.5, 1.0, "f2"),
    ),
    topology=Topology(nodes=1),
    workload=Workload(producers=1, consumers=1, rate=50.0, duration_s=4.0),
)


@pytest.mark.processes
def test_a_run_whose_master_is_missing_goes_on_and_says_why(
    lab_run: Callable[..., RunOutcome], tmp_path: Path
) -> None:
    outcome = lab_run(ALONE, seed=1)
    assert outcome.verdict.outcome == "unknown", outcome.summary
    (reason,) = outcome.verdict.reasons
    assert reason.startswith("cannot be checked: fault f2: cannot resolve @master: 0 masters")
    assert reason.endswith("so f2 was not applied")
    kinds = [(e["kind"], e.get("id")) for e in outcome.events if e["kind"].startswith("fault.")]
    assert kinds == [("fault.start", "f1"), ("fault.skipped", "f2"), ("fault.end", "f1")]
    assert outcome.check.acknowledged > 0 and outcome.check.lost.count == 0


class _Reporting(_Group):
    """A group whose nodes report their last transaction."""

    def statuses(self) -> dict[str, Any]:
        from lab.ground.nodes import NodeStatus

        return {
            n: NodeStatus(name=n, role=r or "WAITING", last_transaction_id=7)
            for n, r in self._roles.items()
        }


class _Kill(NoFault):
    kind = "kill"

    def __init__(self, events: _Recorded) -> None:
        self._events = events

    def apply(self, cluster: object, op: Any) -> None:
        self._events.emit("applied", op.target)


def test_a_kill_says_it_starts_after_the_transactions_read_before_it() -> None:
    """The judge counts from `fault.start`: a slow read of the nodes (a management API that
    waits on a dead peer) must come before it, not between it and the kill."""
    group = _Reporting({"n1": "MASTER", "n2": "REPLICA"})
    events = _Recorded()
    with Nemesis(group, faults={"kill": _Kill(events)}, events=events) as nemesis:
        nemesis.start(fault_window("kill", "@master", 0.0, 1.0, "f1")[0])
    kinds = [(e["kind"], e.get("moment")) for e in events.emitted]
    assert kinds.index(("node.txid", "before")) < kinds.index(("fault.start", None))
    assert kinds.index(("fault.start", None)) + 1 == kinds.index(("applied", None))
