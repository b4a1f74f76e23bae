"""`random` over several seeds: whatever the schedule, no acknowledged message is lost.

The schedules themselves are checked without processes, for many seeds, against the rule of
random_faults.py written out again here from the faults' names: every fault healed inside
the load; at most one node out at a time under NO_SYNC, two at most (on distinct nodes named
as such, never two splits) when no copy lives in memory alone; transfers and full GCs only
when no node is out, graceful stops only when nothing else lasts; node-link latency under
the election timeout; only what the target and backend can apply; the same schedule for the
same seed; and, over many seeds, every kind of the vocabulary and overlapping faults. A
handful of seeds run on real processes (CI time: each run takes about 25–30 s). `random
--mode active-passive` is checked the same way (brokers out one at a time, 3 s or more
apart; everything else overlaps), and one seed runs on processes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations, pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faults.schedule_check import check_schedule
from faults.selectors import split_sides
from lab.ground.cluster_settings import ACTIVE_PASSIVE
from lab.ground.faultops import FaultOp
from lab.ground.nodes import TargetTraits
from lab.ground.spec import Durability, RunSpec
from lab.ground.topology import split_node_link
from lab.judge.metrics import read_events
from lab.run.runner import RunOutcome
from scenarios.catalog import scenario_named

# 83 draws two graceful stops and a transfer; the others run with --lab-long.
RUN_SEEDS = (83, pytest.param(11, marks=pytest.mark.long), pytest.param(29, marks=pytest.mark.long))
ACTIVE_PASSIVE_SEED = 7
SEEDS = st.integers(min_value=0, max_value=2**63 - 1)
DURABILITIES = (
    Durability(),  # NO_SYNC,NO_SYNC,SIMPLE_MAJORITY
    Durability("NO_SYNC", "NO_SYNC", "ALL"),
    Durability("WRITE_NO_SYNC", "WRITE_NO_SYNC", "SIMPLE_MAJORITY"),
    Durability("SYNC", "WRITE_NO_SYNC", "ALL", coalescing_sync=False),
    Durability("SYNC", "NO_SYNC", "SIMPLE_MAJORITY", coalescing_sync=False),
)
TARGETS = (("broker_ref", "process"), ("qpid-broker-j", "process"), ("qpid-broker-j", "docker"))
SPLITS = ("partition", "isolate", "one_way_partition")
ROLES = ("@master", "@replica:1", "@replica:2")


@dataclass(frozen=True)
class _Window:
    start: FaultOp
    end_s: float

    @property
    def fault(self) -> str:
        return self.start.fault

    @property
    def target(self) -> str:
        return self.start.target

    def lasts_at(self, t: float) -> bool:
        return self.start.at_s <= t < self.end_s

    @property
    def kind(self) -> str:
        """The vocabulary's name: a toxic or a cut says which links it is on."""
        if self.fault in ("latency", "bandwidth", "reset_peer", "cut"):
            where = "node" if split_node_link(self.target) is not None else "client"
            return f"{where} {self.fault}"
        if self.target == "manager":
            return f"manager {self.fault}"
        return self.fault

    @property
    def takes_out(self) -> bool:
        """Whether it takes a node (or a broker) out, or is an operator's action."""
        return self.kind in (
            "kill",
            "graceful_stop",
            "pause",
            *SPLITS,
            "transfer_master",
            "node bandwidth",
            "node reset_peer",
        )

    @property
    def nodes(self) -> set[str]:
        """The nodes it names (a split: the node alone on its side)."""
        if self.fault in ("partition", "one_way_partition"):
            a, b = split_sides(str(self.start.params["sides"]))
            return set(a if len(a) == 1 else b)
        ends = split_node_link(self.target)
        return set(ends) if ends else {self.target}


def _windows(spec: RunSpec) -> list[_Window]:
    """Each fault's window; asserts every fault is healed, after it starts, inside the load."""
    ops = spec.schedule
    starts = {op.id: op for op in ops if op.action == "start"}
    stops = {op.id: op for op in ops if op.action == "stop"}
    assert starts.keys() == stops.keys(), "a fault never healed (or healed, never started)"
    assert len(starts) * 2 == len(ops)
    windows = []
    for fault_id, start in starts.items():
        stop = stops[fault_id]
        assert (stop.fault, stop.target, stop.params) == (start.fault, start.target, start.params)
        assert 0 < start.at_s <= stop.at_s <= spec.workload.duration_s - 2.0
        windows.append(_Window(start, stop.at_s))
    return sorted(windows, key=lambda w: w.start.at_s)


def _spec(
    seed: int, durability: Durability, target: str, backend: str, mode: str | None = None
) -> RunSpec:
    return (
        scenario_named("random")
        .in_mode(mode)
        .spec(seed, backend=backend, target=TargetTraits(name=target), durability=durability)
    )


def _check_group_rule(spec: RunSpec) -> None:
    windows = _windows(spec)
    nodes = spec.topology.node_names
    jvm = spec.target != "broker_ref"
    in_memory = "NO_SYNC" in (spec.durability.master_sync, spec.durability.replica_sync)
    election_ms = spec.group.election_timeout_s * 1000
    for w in windows:
        lasting = [o for o in windows if o is not w and o.lasts_at(w.start.at_s)]
        outs = [o for o in (*lasting, w) if o.takes_out]
        assert len(outs) <= (1 if in_memory else 2), f"{w.start}: out together: {outs}"
        if len(outs) == 2:
            first, second = outs
            assert "transfer_master" not in (first.fault, second.fault)
            assert not (first.fault in SPLITS and second.fault in SPLITS)
            assert all("@" not in str(o.start.to_json()) for o in outs)
            assert not first.nodes & second.nodes
        if w.fault in ("full_gc", "transfer_master"):
            assert not any(o.takes_out for o in lasting), f"{w.start} while a node is out"
        if w.fault == "graceful_stop":
            assert not lasting, f"{w.start} while another fault lasts"
        assert all(o.target != w.target for o in lasting), "two faults on one target at once"
        if w.kind == "node latency":
            params = w.start.params
            assert int(params["latency_ms"]) + int(params["jitter_ms"]) < election_ms
        if w.fault in SPLITS:
            assert not jvm or spec.backend == "docker", "Broker-J node links cut on processes"
        if w.kind.startswith("node ") or w.fault == "one_way_partition":
            assert not jvm, "a toxic on a Broker-J node link, which has no proxy"
        if w.fault == "full_gc":
            assert jvm, "a full GC on a target with no JVM"
        if w.fault in ("partition", "one_way_partition"):
            a, b = split_sides(str(w.start.params["sides"]))
            assert sorted(a + b) == sorted(nodes)
        elif w.fault == "transfer_master":
            assert w.target in ROLES[1:]
        elif w.kind.startswith("client "):
            assert w.target in {f"client_to_{n}" for n in (*nodes, "@master")}
        elif w.kind.startswith("node "):
            assert w.nodes <= set(nodes) and len(w.nodes) == 2
        else:
            assert w.target in (*nodes, *ROLES)


@settings(max_examples=200, deadline=None)  # a busy machine is not a failure
@given(seed=SEEDS, durability=st.sampled_from(DURABILITIES), where=st.sampled_from(TARGETS))
def test_random_schedules_keep_the_promise_whatever_the_seed(
    seed: int, durability: Durability, where: tuple[str, str]
) -> None:
    spec = _spec(seed, durability, *where)
    assert spec.schedule, "a schedule with no fault tests nothing"
    assert spec.schedule == _spec(seed, durability, *where).schedule  # a pure function
    check_schedule(spec.schedule, spec.topology.node_names, spec.workload.duration_s)
    _check_group_rule(spec)


GROUP_VOCABULARY = {
    "kill",
    "graceful_stop",
    "pause",
    "partition",
    "isolate",
    "one_way_partition",
    "node bandwidth",
    "node reset_peer",
    "transfer_master",
    "node latency",
    "client latency",
    "client bandwidth",
    "client reset_peer",
    "client cut",
}


def _kinds_over(specs: list[RunSpec]) -> set[str]:
    return {w.kind for spec in specs for w in _windows(spec)}


def _overlapping_outs(spec: RunSpec) -> int:
    outs = [w for w in _windows(spec) if w.takes_out]
    return sum(
        a.lasts_at(b.start.at_s) or b.lasts_at(a.start.at_s) for a, b in combinations(outs, 2)
    )


def test_over_many_seeds_every_kind_is_drawn_and_faults_overlap() -> None:
    seeds = range(300)
    default = [_spec(s, Durability(), "broker_ref", "process") for s in seeds]
    assert _kinds_over(default) == GROUP_VOCABULARY
    overlaps = sum(
        any(a.lasts_at(b.start.at_s) for a, b in combinations(_windows(spec), 2))
        for spec in default
    )
    assert overlaps > len(default) // 2, "most schedules should overlap some faults"
    on_disk = Durability("WRITE_NO_SYNC", "WRITE_NO_SYNC", "SIMPLE_MAJORITY")
    assert any(_overlapping_outs(_spec(s, on_disk, "broker_ref", "process")) for s in seeds)
    assert not any(_overlapping_outs(spec) for spec in default)
    jvm = [_spec(s, Durability(), "qpid-broker-j", "docker") for s in seeds]
    assert _kinds_over(jvm) == (
        GROUP_VOCABULARY
        - {"one_way_partition", "node bandwidth", "node reset_peer", "node latency"}
    ) | {"full_gc"}


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


AP_BROKER_FAULTS = ("kill", "pause")
AP_VOCABULARY = {
    "kill",
    "pause",
    "node latency",
    "node bandwidth",
    "client latency",
    "client bandwidth",
    "client cut",
    "manager pause",
    "manager kill",
}


def _ap_spec(seed: int) -> RunSpec:
    return _spec(seed, Durability(), "broker_ref", "process", ACTIVE_PASSIVE)


@settings(max_examples=200, deadline=None)  # a busy machine is not a failure
@given(seed=SEEDS)
def test_active_passive_schedules_take_one_broker_out_at_a_time(seed: int) -> None:
    spec = _ap_spec(seed)
    assert spec.group.is_active_passive and spec.workload.virtual_address
    assert spec.schedule, "a schedule with no fault tests nothing"
    check_schedule(spec.schedule, spec.topology.node_names, spec.workload.duration_s, managed=True)
    windows = _windows(spec)
    nodes = spec.topology.node_names
    brokers = [w for w in windows if w.kind in AP_BROKER_FAULTS]
    for w, after in pairwise(brokers):
        assert after.start.at_s - w.end_s >= 3.0, "the next broker out before a backup is ready"
    for w in windows:
        assert w.kind in AP_VOCABULARY
        if w.kind in AP_BROKER_FAULTS:
            assert w.target in (*nodes, *ROLES)
        elif w.kind.startswith("client "):
            assert w.target == "client_vip"  # the clients' only link
        elif w.kind.startswith("node "):
            assert w.nodes <= set(nodes) and len(w.nodes) == 2
        lasting = [o for o in windows if o is not w and o.lasts_at(w.start.at_s)]
        assert all(o.target != w.target for o in lasting), "two faults on one target at once"


def test_over_many_seeds_the_active_passive_twin_draws_its_whole_vocabulary() -> None:
    specs = [_ap_spec(s) for s in range(200)]
    assert _kinds_over(specs) == AP_VOCABULARY
    assert any(
        a.lasts_at(b.start.at_s) and a.kind in AP_BROKER_FAULTS
        for spec in specs
        for a, b in combinations(_windows(spec), 2)
    ), "faults that take no broker out should overlap one that does"


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
