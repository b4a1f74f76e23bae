"""Schedules are pure functions of the spec and the seed; heals come before faults."""

from __future__ import annotations

import random
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from faults.nemesis import Nemesis
from lab.ground.errors import ClusterError
from lab.ground.faultops import FaultOp, ops_from_json
from lab.ground.spec import RunSpec
from scenarios.catalog import RUNNABLE, SCENARIOS


@pytest.mark.parametrize("name", sorted(RUNNABLE))
@given(seed=st.integers(min_value=0, max_value=2**63 - 1))
def test_same_seed_same_schedule(name: str, seed: int) -> None:
    scenario = RUNNABLE[name]
    assert scenario.spec(seed).schedule == scenario.spec(seed).schedule


@pytest.mark.parametrize("name", sorted(RUNNABLE))
def test_different_seeds_give_different_schedules(name: str) -> None:
    scenario = RUNNABLE[name]
    schedules = {tuple(op.at_s for op in scenario.spec(seed).schedule) for seed in range(20)}
    assert len(schedules) > 1


@pytest.mark.parametrize("name", sorted(RUNNABLE))
@given(seed=st.integers(min_value=0, max_value=2**32))
def test_every_started_fault_is_stopped_within_the_run(name: str, seed: int) -> None:
    scenario = RUNNABLE[name]
    schedule = scenario.spec(seed).schedule
    starts = {op.id: op for op in schedule if op.action == "start"}
    stops = {op.id: op for op in schedule if op.action == "stop"}
    assert starts.keys() == stops.keys()
    for fault_id, start in starts.items():
        assert 0 < start.at_s < stops[fault_id].at_s < scenario.workload.duration_s


def test_schedule_round_trips_through_json() -> None:
    spec = SCENARIOS["single-node-crash"].spec(42)
    again = RunSpec.from_json(spec.to_json(), source=__import__("pathlib").Path("spec.json"))
    assert again == spec
    assert ops_from_json([op.to_json() for op in spec.schedule]) == spec.schedule


class _Recorder:
    """A fake cluster that records calls, and checks the heal is registered first."""

    def __init__(self, nemesis_ref: list[Nemesis]) -> None:
        self.calls: list[str] = []
        self.nemesis_ref = nemesis_ref

    def kill(self, name: str) -> None:
        pending = [op.id for op in self.nemesis_ref[0].heals.pending()]
        self.calls.append(f"kill {name} pending={pending}")

    def restart(self, name: str) -> None:
        self.calls.append(f"restart {name}")

    def pause(self, name: str) -> None:
        pending = [op.id for op in self.nemesis_ref[0].heals.pending()]
        self.calls.append(f"pause {name} pending={pending}")
        raise ClusterError("the pause failed half-way")

    def resume(self, name: str) -> None:
        self.calls.append(f"resume {name}")


def _op(action: str, fault: str, fault_id: str, at: float = 0.0) -> FaultOp:
    return FaultOp(at_s=at, action=action, fault=fault, target="n1", id=fault_id)  # type: ignore[arg-type]


def test_heal_is_registered_before_the_fault_is_applied() -> None:
    ref: list[Nemesis] = []
    cluster = _Recorder(ref)
    nemesis = Nemesis(cluster)
    ref.append(nemesis)
    nemesis.apply(_op("start", "kill", "f1"))
    assert cluster.calls == ["kill n1 pending=['f1']"]
    nemesis.apply(_op("stop", "kill", "f1"))
    assert cluster.calls[-1] == "restart n1"
    assert nemesis.heals.pending() == ()


def test_a_fault_that_fails_half_way_is_still_healed() -> None:
    ref: list[Nemesis] = []
    cluster = _Recorder(ref)
    with pytest.raises(ClusterError), Nemesis(cluster) as nemesis:
        ref.append(nemesis)
        nemesis.apply(_op("start", "pause", "f2"))
    assert cluster.calls == ["pause n1 pending=['f2']", "resume n1"]


def test_leaving_the_block_heals_everything_newest_first_even_on_interrupt() -> None:
    ref: list[Nemesis] = []
    cluster = _Recorder(ref)
    with pytest.raises(KeyboardInterrupt), Nemesis(cluster) as nemesis:
        ref.append(nemesis)
        nemesis.apply(_op("start", "kill", "a"))
        nemesis.heals.push(_op("start", "pause", "b"), lambda: cluster.resume("n1"))
        raise KeyboardInterrupt
    assert cluster.calls[-2:] == ["resume n1", "restart n1"]


def test_run_applies_operations_at_their_times() -> None:
    now = [0]

    def clock() -> int:
        now[0] += 10_000_000  # each look at the clock advances 10 ms
        return now[0]

    ref: list[Nemesis] = []
    cluster = _Recorder(ref)
    log: list[dict[str, object]] = []
    nemesis = Nemesis(cluster, clock_ns=clock, log=log.append)
    ref.append(nemesis)
    nemesis.run(
        (_op("stop", "kill", "f1", at=0.5), _op("start", "kill", "f1", at=0.2)), started_at_ns=0
    )
    applied = [(e["action"], e["time"]) for e in log]
    assert [a for a, _ in applied] == ["start", "stop"]
    assert all(isinstance(t, int) for _, t in applied)
    assert applied[0][1] >= 200_000_000 and applied[1][1] >= 500_000_000


def test_rng_is_the_only_source_of_randomness() -> None:
    scenario = SCENARIOS["single-node-crash"]
    random.seed(1)
    first = scenario.spec(7).schedule
    random.seed(2)
    assert scenario.spec(7).schedule == first


class _Together:
    """A fake cluster whose kill returns only once all three victims are being killed."""

    def __init__(self) -> None:
        self.barrier = threading.Barrier(3, timeout=5.0)
        self.killed: list[str] = []
        self.restarted: list[str] = []

    def kill(self, name: str) -> None:
        self.barrier.wait()  # BrokenBarrierError after 5 s if the kills ran one by one
        self.killed.append(name)

    def restart(self, name: str) -> None:
        self.restarted.append(name)


def test_starts_at_one_moment_strike_together_and_are_all_healed() -> None:
    cluster = _Together()
    log: list[dict[str, object]] = []
    schedule = tuple(
        op
        for i, node in enumerate(("n1", "n2", "n3"), start=1)
        for op in (
            FaultOp(0.0, "start", "kill", node, f"f{i}"),
            FaultOp(0.05, "stop", "kill", node, f"f{i}"),
        )
    )
    with Nemesis(cluster, log=log.append) as nemesis:
        nemesis.run(schedule, started_at_ns=time.monotonic_ns())
    assert sorted(cluster.killed) == ["n1", "n2", "n3"]
    assert cluster.restarted == ["n1", "n2", "n3"]  # stops at one moment: in schedule order
    assert nemesis.applied == 3 and nemesis.healed == 3
    assert [e["ok"] for e in log] == [True] * 6


def test_a_start_that_fails_among_others_at_its_moment_is_raised_and_all_are_healed() -> None:
    ref: list[Nemesis] = []
    cluster = _Recorder(ref)
    schedule = (_op("start", "kill", "a"), _op("start", "pause", "b"), _op("start", "kill", "c"))
    with pytest.raises(ClusterError), Nemesis(cluster) as nemesis:
        ref.append(nemesis)
        nemesis.run(schedule, started_at_ns=time.monotonic_ns())
    assert sorted(c.split(" pending")[0] for c in cluster.calls[:3]) == [
        "kill n1",
        "kill n1",
        "pause n1",
    ]
    assert cluster.calls[3:] == ["restart n1", "resume n1", "restart n1"]  # newest first
