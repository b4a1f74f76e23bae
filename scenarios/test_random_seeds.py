"""`random` over several seeds: whatever the schedule, no acknowledged message is lost.

The schedules themselves are checked without processes for many seeds (one fault at a
time, inside the load, each on a node, a role or a partition of the group); a handful of
seeds run on real processes (CI time: each run takes about 25 s). `random --mode
active-passive` (kills and pauses of brokers, 3–4.5 s apart so a ready backup is always
there to promote) is checked the same way, and one seed runs on processes.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from faults.selectors import split_sides
from lab.ground.cluster_settings import ACTIVE_PASSIVE
from lab.judge.metrics import read_events
from lab.run.runner import RunOutcome
from scenarios.catalog import scenario_named

RUN_SEEDS = (3, 11, 29)
ACTIVE_PASSIVE_SEED = 7


@given(seed=st.integers(min_value=0, max_value=2**63 - 1))
def test_random_schedules_apply_one_fault_at_a_time(seed: int) -> None:
    scenario = scenario_named("random")
    spec = scenario.spec(seed)
    ops = spec.schedule
    assert ops, "a schedule with no fault tests nothing"
    windows = sorted(
        (start.at_s, stop.at_s)
        for start in ops
        if start.action == "start"
        for stop in ops
        if stop.action == "stop" and stop.id == start.id
    )
    assert len(windows) * 2 == len(ops)
    for (_, end), (next_start, _) in pairwise(windows):
        assert next_start > end
    assert windows[-1][1] < spec.workload.duration_s
    for op in ops:
        if op.fault == "partition":
            a, b = split_sides(str(op.params["sides"]))
            assert len(a) + len(b) == spec.topology.nodes
        else:
            assert op.target in (*spec.topology.node_names, "@master", "@replica:1", "@replica:2")


@pytest.mark.processes
@pytest.mark.parametrize("seed", RUN_SEEDS)
def test_random_schedule_loses_no_acknowledged_message(
    seed: int, lab_run: Callable[..., RunOutcome]
) -> None:
    outcome = lab_run("random", seed=seed)
    assert outcome.check.acknowledged > 0
    assert outcome.verdict.held, (
        f"{outcome.summary}\nrun folder: {outcome.folder.path}\nreproduce: {outcome.reproduce}"
    )


@given(seed=st.integers(min_value=0, max_value=2**63 - 1))
def test_active_passive_schedules_leave_time_to_be_ready_again(seed: int) -> None:
    scenario = scenario_named("random").in_mode(ACTIVE_PASSIVE)
    spec = scenario.spec(seed)
    assert spec.group.is_active_passive and spec.workload.virtual_address
    ops = spec.schedule
    assert ops, "a schedule with no fault tests nothing"
    starts = {op.id: op for op in ops if op.action == "start"}
    stops = {op.id: op for op in ops if op.action == "stop"}
    assert starts.keys() == stops.keys()
    windows = sorted((starts[i].at_s, stops[i].at_s) for i in starts)
    for (_, end), (next_start, _) in pairwise(windows):
        assert next_start - end >= 3.0, "the next fault before a backup could be ready again"
    assert windows[-1][1] < spec.workload.duration_s
    for op in ops:
        assert op.fault in ("kill", "pause")
        assert op.target in (*spec.topology.node_names, "@master", "@replica:1", "@replica:2")


@pytest.mark.processes
def test_random_active_passive_schedule_loses_no_acknowledged_message(
    lab_run: Callable[..., RunOutcome],
) -> None:
    outcome = lab_run("random", seed=ACTIVE_PASSIVE_SEED, mode=ACTIVE_PASSIVE)
    assert outcome.check.acknowledged > 0
    kinds = [e.get("kind") for e in read_events(outcome.folder.events)]
    assert "manager.promote" in kinds
    assert outcome.verdict.held, (
        f"{outcome.summary}\nrun folder: {outcome.folder.path}\nreproduce: {outcome.reproduce}"
    )
