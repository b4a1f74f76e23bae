"""A guided pattern run's settings, drawn: only inside the promise its prediction rests on."""

from __future__ import annotations

import random
from dataclasses import replace

from lab.campaign.candidates import candidate_problem, seed_spec
from lab.campaign.guide import WARMUP, warmup_way
from lab.campaign.plan import Cell
from lab.campaign.run_settings import draw_settings, replica_timeouts
from scenarios.random_pattern_steps import lag
from scenarios.random_patterns import pattern_schedule
from scenarios.random_rule import rule_problem

GROUP = Cell("random", "broker_ref", "process", "replicated-group")
CLUSTER = Cell("random", "broker_ref", "process", "active-passive")


def test_drawn_settings_keep_the_majority_and_only_shorten_timeouts() -> None:
    base = seed_spec(GROUP, 1)
    rng = random.Random(7)
    drawn = [draw_settings(base, rng) for _ in range(200)]
    assert {d.durability.ack_policy for d in drawn} == {"SIMPLE_MAJORITY"}
    assert all(
        d.group.insufficient_replicas_timeout_s <= base.group.insufficient_replicas_timeout_s
        for d in drawn
    )
    triplets = {d.durability.triplet for d in drawn}
    assert base.durability.triplet in triplets  # left as it was some of the time
    assert "SYNC,SYNC,SIMPLE_MAJORITY" in triplets and len(triplets) >= 4
    # the two sides apart: Broker-J's default (SYNC,NO_SYNC) and the other way round
    assert {"SYNC,NO_SYNC,SIMPLE_MAJORITY", "NO_SYNC,SYNC,SIMPLE_MAJORITY"} <= triplets
    assert any(d.group.insufficient_replicas_timeout_s < 5.0 for d in drawn)
    assert all(candidate_problem(d) is None for d in drawn[:20])  # the checker accepts them


def test_a_commit_may_wait_less_than_a_round_trip_over_the_links_random_slows() -> None:
    """The fail-slow replica: one of the drawn waits is shorter than the round trip the
    patterns' lag makes (latency each way on the master's links to a replica), so that under
    lag a commit gives up while its master keeps its role."""
    base = seed_spec(GROUP, 1)
    waits = replica_timeouts(base)
    assert waits == (0.4, 0.8, 1.5, 3.0)
    trips = []
    for seed in range(40):
        for step in lag(base, random.Random(seed), 2.0, 5.0):
            if step.fault == "latency":
                trips.append(2 * int(step.params["latency_ms"]) / 1000)
    assert min(trips) < waits[0] < max(trips)
    assert replica_timeouts(
        replace(base, group=replace(base.group, insufficient_replicas_timeout_s=0.3))
    ) == (0.3,)
    drawn = {
        draw_settings(base, random.Random(n)).group.insufficient_replicas_timeout_s
        for n in range(300)
    }
    assert drawn == {0.4, 0.8, 1.5, 3.0, 5.0}


def test_priorities_differ_some_of_the_time_and_are_never_never() -> None:
    """Only a group whose nodes differ in priority tells an election that weighs priority
    right from one that weighs it wrong; priority 0 (Never) can lose data and is not drawn."""
    base = seed_spec(GROUP, 1)
    specs = [draw_settings(base, random.Random(n)) for n in range(300)]
    drawn = [d.group.priority for d in specs]
    given = [p for p in drawn if p]
    assert 0.1 < len(given) / len(drawn) < 0.35  # DRAWN x PRIORITY_SHARE: 0.2
    assert all(
        set(d.group.priority) == set(d.topology.node_names) for d in specs if d.group.priority
    )
    assert {v for p in given for v in p.values()} == {1, 2, 3}
    assert sum(len(set(p.values())) > 1 for p in given) > len(given) // 2
    assert all(candidate_problem(d) is None for d in specs[:40] if d.group.priority)


def test_a_pair_with_its_first_node_designated_primary_keeps_the_rule() -> None:
    """A group of two (n1 the designated primary) is drawn some of the time; the patterns
    drawn on it keep `random`'s rule, and the checker accepts them."""
    base = seed_spec(GROUP, 1)
    pairs = []
    for n in range(300):
        drawn = draw_settings(base, random.Random(n))
        if drawn.topology.nodes == 2:
            pairs.append(drawn)
        else:
            assert drawn.group.designated_primary == ()
    assert 0.13 < len(pairs) / 300 < 0.28  # DRAWN x PAIR_SHARE: 0.2
    assert all(p.group.designated_primary == ("n1",) for p in pairs)
    names: set[str] = set()
    for seed, pair in enumerate(pairs):
        schedule, drawn_names = pattern_schedule(pair, random.Random(seed))
        made = pair.with_schedule(schedule)
        assert rule_problem(made) is None and candidate_problem(made) is None
        names.update(drawn_names)
    assert {"master-cut-off", "master-crash-under-lag", "rejoin-then-master-fault"} <= names


def test_a_cluster_and_a_target_with_its_own_timeouts_keep_their_settings() -> None:
    rng = random.Random(3)
    cluster = seed_spec(CLUSTER, 1)
    assert all(draw_settings(cluster, rng) == cluster for _ in range(50))
    own = replace(seed_spec(GROUP, 1), target_timeouts=(("election timeout", 6.0),))
    assert all(draw_settings(own, rng) == own for _ in range(50))


def test_the_same_seed_draws_the_same_settings() -> None:
    base = seed_spec(GROUP, 2)
    first = [draw_settings(base, random.Random(11)) for _ in range(3)]
    again = [draw_settings(base, random.Random(11)) for _ in range(3)]
    assert first == again


def test_copies_on_disk_open_the_patterns_that_take_two_nodes_out() -> None:
    base = seed_spec(GROUP, 1)
    on_disk = replace(
        base, durability=replace(base.durability, master_sync="WRITE_NO_SYNC", replica_sync="SYNC")
    )
    weights = {"two-out-on-disk": 1000.0}
    _, in_memory = pattern_schedule(base, random.Random(5), weights)
    schedule, names = pattern_schedule(on_disk, random.Random(5), weights)
    assert "two-out-on-disk" not in in_memory
    assert "two-out-on-disk" in names
    assert rule_problem(on_disk.with_schedule(schedule)) is None


def test_the_warm_up_plays_mostly_patterns_and_one_fresh_draw() -> None:
    ways = [warmup_way(n) for n in range(1, WARMUP + 1)]
    assert ways[0] == "pattern" and ways.count("fresh") == 1 and ways.count("pattern") >= 3
