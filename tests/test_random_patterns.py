"""Schedules of HA failure patterns (scenarios.random_patterns): inside `random`'s rule for any
seed, on both designs and every target they can apply to; windows measured against the run's
own timeouts; the replicas given time to fall behind before a lagged fault."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest
from test_predictions import _check, _metrics

from lab.campaign.candidates import candidate_problem, seed_spec
from lab.campaign.plan import Cell
from lab.campaign.windows import windows_of
from lab.ground.spec import Durability, RunSpec
from lab.judge.bounds import Timings
from scenarios.random_faults import RANDOM
from scenarios.random_pattern_steps import LONGEST_OUT_S
from scenarios.random_patterns import PATTERNS, pattern_schedule, patterns_for
from scenarios.random_rule import CRASH_LEAD_S, rule_problem
from scenarios.random_timeouts import FACTORS, timeouts_of, window_s
from scenarios.random_vocabulary import MANAGER

GROUP = Cell("random", "broker_ref", "process", "replicated-group")
AP = Cell("random", "broker_ref", "process", "active-passive")


@pytest.mark.parametrize("cell", [GROUP, AP], ids=["group", "active-passive"])
def test_every_pattern_schedule_keeps_the_rule_and_every_pattern_is_drawn(cell: Cell) -> None:
    drawn: Counter[str] = Counter()
    for seed in range(120):
        spec = seed_spec(cell, seed)
        schedule, names = pattern_schedule(spec, random.Random(seed))
        assert names, f"seed {seed}: no pattern fits the load"
        made = spec.with_schedule(schedule)
        assert rule_problem(made) is None
        assert candidate_problem(made) is None
        drawn.update(names)
    on_disk_only = {"two-out-on-disk"}  # the scenario's own durability keeps copies in memory
    assert set(drawn) == {p.name for p in patterns_for(seed_spec(cell, 1))} - on_disk_only


def test_the_same_seed_makes_the_same_schedule() -> None:
    spec = seed_spec(GROUP, 5)
    assert pattern_schedule(spec, random.Random(5)) == pattern_schedule(spec, random.Random(5))


def test_two_nodes_out_only_when_every_copy_is_on_disk() -> None:
    in_memory = seed_spec(GROUP, 1)
    on_disk = replace(in_memory, durability=Durability("WRITE_NO_SYNC", "WRITE_NO_SYNC"))
    weights = {p.name: (1.0 if p.name == "two-out-on-disk" else 0.0) for p in PATTERNS}
    assert pattern_schedule(in_memory, random.Random(1), weights) == ((), ())
    schedule, names = pattern_schedule(on_disk, random.Random(1), weights)
    assert names and set(names) == {"two-out-on-disk"}
    windows = windows_of(schedule)
    overlapping = [
        (a, b)
        for a in windows
        for b in windows
        if a.id < b.id and a.end_s is not None and b.start_s < a.end_s
    ]
    assert overlapping  # a node stalled while another is killed
    assert rule_problem(on_disk.with_schedule(schedule)) is None


def test_windows_follow_the_runs_own_timeouts() -> None:
    spec = seed_spec(GROUP, 1)
    slow = replace(spec, group=replace(spec.group, election_timeout_s=2.0))
    assert [t.seconds for t in timeouts_of(slow)][1:4] == [2.0, 4.0, 6.0]
    lengths = {window_s(slow, random.Random(n), shortest=0.5, longest=8.0) for n in range(200)}
    products = {round(t.seconds * f, 3) for t in timeouts_of(slow) for f in FACTORS}
    assert lengths <= products | {0.5, 8.0}
    assert {1.0, 1.6, 2.6, 4.0, 6.0, 7.8} <= lengths  # shorter and longer than the timeouts
    ap = seed_spec(AP, 1)
    names = {t.name for t in timeouts_of(ap)}
    assert names == {"link heartbeat x2", "manager detection", "backup timeout", "link maintenance"}


def test_a_lagged_fault_comes_after_the_replicas_had_time_to_fall_behind() -> None:
    seen = 0
    for seed in range(60):
        spec = seed_spec(GROUP, seed)
        windows = windows_of(pattern_schedule(spec, random.Random(seed))[0])
        lags = [w for w in windows if w.fault == "latency"]
        outs = [w for w in windows if w.fault != "latency"]
        for lag in lags:
            assert lag.end_s is not None
            during = [w for w in outs if lag.start_s <= w.start_s < lag.end_s]
            if during:
                seen += 1
                assert min(w.start_s for w in during) - lag.start_s >= 0.5 - 1e-9
                assert all(w.end_s is not None and w.end_s <= lag.end_s for w in during)
    assert seen


@pytest.mark.parametrize("cell", [GROUP, AP], ids=["group", "active-passive"])
def test_lag_is_every_link_alike_or_one_straggler_behind_the_master(cell: Cell) -> None:
    shapes: Counter[str] = Counter()
    for seed in range(80):
        spec = seed_spec(cell, seed)
        schedule, _names = pattern_schedule(spec, random.Random(seed))
        slowed = {w.target for w in windows_of(schedule) if w.fault in ("latency", "bandwidth")}
        slowed = {t for t in slowed if not t.startswith("client_") and t != "vip"}
        if not slowed:
            continue
        stragglers = {t.split("_to_")[1] for t in slowed if t.startswith("@master_to_")}
        assert {f"{s}_to_@master" for s in stragglers} <= slowed  # both ways behind
        assert stragglers <= {f"@replica:{k}" for k in range(1, spec.topology.nodes)}
        shapes["straggler"] += bool(stragglers)
        shapes["every link"] += any("@" not in t for t in slowed)
        assert rule_problem(spec.with_schedule(schedule)) is None
    assert shapes["straggler"] and shapes["every link"], shapes


@pytest.mark.parametrize("cell", [GROUP, AP], ids=["group", "active-passive"])
def test_a_master_crashed_is_mostly_killed_as_its_host_crashes(cell: Cell) -> None:
    """Most kills of the master in a crash pattern take its node links with it (`host`), so
    that a slowed link's backlog dies with the master instead of reaching the straggler;
    kills that wait for a moment (a catch-up, its end) too, whichever node is master then."""
    crashes: Counter[bool] = Counter()
    plain: Counter[bool] = Counter()
    for seed in range(150):
        spec = seed_spec(cell, seed)
        schedule, _names = pattern_schedule(spec, random.Random(seed))
        for kill in (op for op in schedule if op.action == "start" and op.fault == "kill"):
            if kill.target != "@master":
                assert not kill.params  # a backup, a replica or the manager: a process's death
                continue
            assert kill.params in ({}, {"host": True})
            (crashes if kill.params else plain)[kill.when is not None] += 1
        assert rule_problem(spec.with_schedule(schedule)) is None
        assert not any(
            op.fault == "isolate"
            and op.target == "@master"
            and op.when is None
            and any(
                k.fault == "kill" and 0 < k.at_s - op.at_s <= CRASH_LEAD_S + 1e-9 for k in schedule
            )
            for op in schedule
        )  # one step, not two
    assert crashes[False] and crashes[True] and plain[False] and plain[True], (crashes, plain)
    assert crashes[True] > plain[True]


def test_a_backup_taken_out_catches_up_behind_a_narrow_link_when_the_primary_dies() -> None:
    """The catch-up pattern slows the links between the primary and the backup it takes out,
    from before the backup goes until after the primary's kill, so that the catch-up lasts
    past the quiet the rule asks between two brokers taken out; or, when the kill waits for
    the catch-up's end (`caught-up`), until just after the kill is armed, so that it can end
    (a load heavier than the narrow link would hold the backup in catch-up for good)."""
    name = "backup-catchup-then-primary-crash"
    seen = first_in_line = 0
    moments: Counter[str | None] = Counter()
    for seed in range(30):
        spec = seed_spec(AP, seed)
        schedule, names = pattern_schedule(spec, random.Random(seed), {name: 1000.0})
        if names[:1] != (name,):
            continue
        windows = windows_of(schedule)
        away = next(w for w in windows if w.fault in ("kill", "pause") and _backup(w.target))
        primary = next(w for w in windows if w.fault == "kill" and w.target == "@master")
        narrow = [w for w in windows if w.fault == "bandwidth" and w.start_s <= away.start_s]
        assert {w.target for w in narrow} == {
            f"@master_to_{away.target}",
            f"{away.target}_to_@master",
        }
        assert all(w.end_s is not None and w.end_s >= primary.start_s for w in narrow)
        moments[primary.when] += 1
        if primary.when == "caught-up":
            assert all(w.end_s is not None and w.end_s <= primary.start_s + 0.5 for w in narrow)
        else:
            assert primary.when == "catchup" and primary.end_s is not None
            assert all(w.end_s is not None and w.end_s >= primary.end_s for w in narrow)
        assert rule_problem(spec.with_schedule(schedule)) is None
        seen += 1
        first_in_line += away.target == "@replica:1"
    assert seen >= 20 and min(moments[m] for m in ("catchup", "caught-up")) >= 5, moments
    # Mostly the backup a manager going through its brokers by name would look at first.
    assert first_in_line >= seen * 0.7, (first_in_line, seen)


def _backup(target: str) -> bool:
    return target.startswith("@replica:")


def test_a_frozen_backups_stall_is_sometimes_hidden_from_the_cluster_manager() -> None:
    """Some of the backups the catch-up pattern freezes are frozen past the two link
    heartbeats after which their primary drops them, while the cluster manager is frozen from
    a moment before until a moment after (it neither fences the backup nor sees it answer
    late); the manager is back before the primary is killed; every schedule keeps the
    rule. Without a manager (brokers that activate themselves) nothing is hidden."""
    name = "backup-catchup-then-primary-crash"
    heartbeats = next(
        t.seconds for t in timeouts_of(seed_spec(AP, 1)) if t.name == "link heartbeat x2"
    )
    hidden = frozen = 0
    for seed in range(80):
        spec = seed_spec(AP, seed)
        schedule, names = pattern_schedule(spec, random.Random(seed), {name: 1000.0})
        assert rule_problem(spec.with_schedule(schedule)) is None
        if names[:1] != (name,):
            continue
        windows = windows_of(schedule)
        away = next(w for w in windows if w.fault in ("kill", "pause") and _backup(w.target))
        primary = next(w for w in windows if w.fault == "kill" and w.target == "@master")
        blind = [w for w in windows if w.target == MANAGER and w.start_s < primary.start_s]
        frozen += away.fault == "pause"
        if not blind:
            continue
        assert away.fault == "pause" and [w.fault for w in blind] == ["pause"]
        assert away.end_s is not None and blind[0].end_s is not None
        assert heartbeats < away.end_s - away.start_s <= LONGEST_OUT_S
        assert blind[0].start_s < away.start_s and away.end_s < blind[0].end_s < primary.start_s
        hidden += 1
    assert frozen >= 8 and frozen * 0.25 <= hidden < frozen, (hidden, frozen)
    self_activated = seed_spec(AP, 1)
    self_activated = replace(
        self_activated,
        group=replace(
            self_activated.group,
            active_passive=self_activated.group.active_passive.with_changes(activation="self"),
        ),
    )
    for seed in range(20):
        schedule, _ = pattern_schedule(self_activated, random.Random(seed), {name: 1000.0})
        assert all(w.target != MANAGER for w in windows_of(schedule))


def test_a_new_master_is_hit_in_its_first_seconds_or_at_the_old_masters_return() -> None:
    """The master the group elects after the first is hit either as soon as the rule allows
    (no trigger) or while the old master, back, catches up (`catchup`, after the quiet) or
    the moment it has caught up (`caught-up`, only with every copy on disk, armed as it
    comes back); every schedule keeps the rule."""
    name = "new-master-hit"
    on_disk = Durability("SYNC", "SYNC", "SIMPLE_MAJORITY", False)
    seen: Counter[tuple[bool, str | None]] = Counter()
    for seed in range(80):
        spec = seed_spec(GROUP, seed)
        if seed % 2:
            spec = replace(spec, durability=on_disk)
        schedule, names = pattern_schedule(spec, random.Random(seed), {name: 1000.0})
        assert rule_problem(spec.with_schedule(schedule)) is None
        if names[:1] != (name,):
            continue
        hits = [w for w in windows_of(schedule) if w.target == "@master"]
        first, second = hits[0], hits[1]
        assert first.end_s is not None and second.start_s >= first.end_s
        seen[(spec.durability == on_disk, second.when)] += 1
        if second.when == "caught-up":
            assert second.start_s == first.end_s
    assert seen[(False, "caught-up")] == 0, seen
    for key in ((False, None), (False, "catchup"), (True, None), (True, "caught-up")):
        assert seen[key] >= 3, seen


def test_a_rolling_restart_takes_every_replica_out_in_turn_then_hits_the_master() -> None:
    """Every replica killed once, one after the other, then the master hit when a replica is
    seen catching up; with every copy on disk, half of the time the moment the last one has
    caught up instead, armed as it comes back (the rule asks no quiet there); inside the
    rule; never drawn for an active-passive cluster, where a primary lost with no backup
    ready leaves the cluster hanging by design."""
    name = "rolling-restart"
    seen = 0
    moments: Counter[tuple[bool, str | None]] = Counter()
    on_disk = Durability("SYNC", "WRITE_NO_SYNC", "SIMPLE_MAJORITY", False)
    for seed in range(60):
        spec = seed_spec(GROUP, seed)
        if seed % 2:
            spec = replace(spec, durability=on_disk)
        schedule, names = pattern_schedule(spec, random.Random(seed), {name: 1000.0})
        if names[:1] != (name,):
            continue
        windows = windows_of(schedule)
        kills = [w for w in windows if w.fault == "kill" and w.target.startswith("@replica")]
        hit = next(w for w in windows if w.target == "@master" and w.fault in ("kill", "isolate"))
        assert sorted(w.target for w in kills[: spec.topology.nodes - 1]) == [
            f"@replica:{i}" for i in range(1, spec.topology.nodes)
        ]
        first_round = kills[: spec.topology.nodes - 1]
        assert all(a.end_s is not None and a.end_s <= b.start_s for a, b in pairwise(first_round))
        assert all(k.end_s is not None and k.end_s <= hit.start_s for k in first_round)
        moments[(spec.durability == on_disk, hit.when)] += 1
        if hit.when == "caught-up":
            assert hit.start_s == first_round[-1].end_s  # armed as the last one comes back
        assert rule_problem(spec.with_schedule(schedule)) is None
        seen += 1
    assert seen >= 40
    assert set(moments) == {(False, "catchup"), (True, "catchup"), (True, "caught-up")}
    assert name not in {p.name for p in patterns_for(seed_spec(AP, 1))}


def test_a_target_with_failure_detection_of_its_own_has_windows_drawn_against_it() -> None:
    rabbit = seed_spec(Cell("random", "rabbitmq", "process", "replicated-group"), 3)
    # no judged lease of its own: a cut past the master's lease is measured against its lease
    only = {p.name: (1.0 if p.name == "master-cut-off" else 0.0) for p in PATTERNS}
    cuts = [
        w.end_s - w.start_s
        for seed in range(20)
        for w in windows_of(pattern_schedule(rabbit, random.Random(seed), only)[0])
        if w.fault == "isolate" and w.end_s is not None
    ]
    assert cuts and max(cuts) > 6.25 * 1.15 - 0.001
    own = {t.name: t.seconds for t in timeouts_of(rabbit)}
    assert own == {
        "heartbeat": 1.25,
        "election timeout": 5.0,
        "election x2": 10.0,
        "lease": 6.25,
        "replica timeout": 6.25,
    }  # net_ticktime 5 s: a silent peer is down after 3.75 to 6.25 s
    assert timeouts_of(seed_spec(GROUP, 3))[1].seconds == 0.6  # broker_ref keeps its group's
    lengths = {window_s(rabbit, random.Random(n), shortest=0.5, longest=8.0) for n in range(200)}
    assert {2.5, 5.0, 8.0} <= lengths  # shorter than the detection, and past it
    # recorded in spec.json (and read back) for a target that has them, absent otherwise
    assert RunSpec.from_json(rabbit.to_json(), Path("spec.json")) == rabbit
    assert "target_timeouts" in rabbit.to_json()
    assert "target_timeouts" not in seed_spec(GROUP, 3).to_json()


def test_a_master_is_cut_off_past_the_judged_lease_half_of_the_time() -> None:
    """NEAT's leader isolation, long enough to be seen: a master that keeps its role all
    through the cut overlaps the master the others elect (after their silence and election)
    for longer than `random`'s prediction allows two masters, so its verdict is broken; the
    other cuts stay shorter or longer than the group's own timeouts."""
    name = "master-cut-off"
    spec = seed_spec(GROUP, 1)
    judged = {t.name: t.seconds for t in timeouts_of(spec)}["judged lease"]
    assert judged == 5.6  # silence 0.6 + election 1.2, then the lease: 2 + 0.6 + 1.2
    timings = Timings.of(spec)
    elected = timings.values["silence"].seconds + timings.values["election"].seconds
    only = {p.name: (1.0 if p.name == name else 0.0) for p in PATTERNS}
    lengths = []
    for seed in range(60):
        made = seed_spec(GROUP, seed)
        schedule, names = pattern_schedule(made, random.Random(seed), only)
        assert set(names) == {name}
        cuts = [w for w in windows_of(schedule) if w.fault == "isolate"]
        lengths += [w.end_s - w.start_s for w in cuts if w.end_s is not None]
        assert rule_problem(made.with_schedule(schedule)) is None
    past = [length for length in lengths if length > judged]
    assert len(lengths) >= 60 and 0.3 <= len(past) / len(lengths) <= 0.7
    for length in past:
        kept = replace(_metrics(two_masters=True), two_masters_longest_s=length - elected)
        verdict = RANDOM.prediction.judge(_check(), [], kept, timings=timings)
        assert verdict.violations == ("two-masters",), (length, verdict.reasons)
    assert max(lengths) <= LONGEST_OUT_S


def test_a_group_waits_for_a_catch_up_to_end_only_with_every_copy_on_disk() -> None:
    """A replica of a group catches up within about the rule's quiet, so a step waiting for
    the end of a catch-up (`caught-up`) is drawn only where the rule asks no quiet (every
    copy on disk), armed as the replica comes back; every schedule keeps the rule."""
    on_disk = Durability("WRITE_NO_SYNC", "SYNC", "SIMPLE_MAJORITY", True)
    found: Counter[tuple[bool, str]] = Counter()
    for seed in range(80):
        spec = seed_spec(GROUP, seed)
        if seed % 2:
            spec = replace(spec, durability=on_disk)
        schedule, _ = pattern_schedule(spec, random.Random(seed), {"rejoin-then-master-fault": 1e3})
        windows = windows_of(schedule)
        for w in windows:
            if w.when is not None:
                found[(spec.durability == on_disk, w.when)] += 1
            if w.when == "caught-up":
                backs = [a.end_s for a in windows if a.target == "@replica:1"]
                assert w.start_s in backs, (w, backs)  # armed as the replica is back
        assert rule_problem(spec.with_schedule(schedule)) is None
    assert found[(False, "caught-up")] == 0 and found[(True, "caught-up")] >= 5, found
    assert found[(False, "catchup")] >= 5 and found[(True, "catchup")] >= 5, found
