"""`random`'s rule checked on whole schedules (scenarios.random_rule): every schedule `random`
draws keeps it, in both HA designs, on every target and backend; schedules that break it —
the mixes the documents make no promise for — are refused, each with its reason."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.ground.cluster_settings import ACTIVE_PASSIVE
from lab.ground.faultops import FaultOp
from lab.ground.nodes import TargetTraits
from lab.ground.spec import Durability, RunSpec
from scenarios.base import fault_window
from scenarios.catalog import scenario_named
from scenarios.random_rule import rule_problem

SEEDS = st.integers(min_value=0, max_value=2**63 - 1)
DURABILITIES = (
    Durability(),
    Durability("WRITE_NO_SYNC", "WRITE_NO_SYNC", "SIMPLE_MAJORITY"),
    Durability("SYNC", "WRITE_NO_SYNC", "ALL", coalescing_sync=False),
    Durability("NO_SYNC", "NO_SYNC", "NONE"),
)
WHERE = (
    ("broker_ref", "process"),
    ("qpid-broker-j", "process"),
    ("qpid-broker-j", "docker"),
    ("broker_ref", "ssh"),
    ("qpid-broker-j", "ssh"),
)


def _random(
    seed: int,
    durability: Durability | None = None,
    where: tuple[str, str] = WHERE[0],
    mode: str | None = None,
) -> RunSpec:
    target, backend = where
    return (
        scenario_named("random")
        .in_mode(mode)
        .spec(
            seed,
            backend=backend,
            target=TargetTraits(name=target),
            durability=durability or Durability(),
        )
    )


@settings(max_examples=150, deadline=None)  # a busy machine is not a failure
@given(seed=SEEDS, durability=st.sampled_from(DURABILITIES), where=st.sampled_from(WHERE))
def test_every_schedule_random_draws_keeps_its_rule(
    seed: int, durability: Durability, where: tuple[str, str]
) -> None:
    spec = _random(seed, durability, where)
    assert rule_problem(spec) is None


@settings(max_examples=100, deadline=None)
@given(seed=SEEDS)
def test_every_active_passive_schedule_keeps_its_rule(seed: int) -> None:
    assert rule_problem(_random(seed, mode=ACTIVE_PASSIVE)) is None


def _with(spec: RunSpec, *windows: tuple[FaultOp, FaultOp]) -> RunSpec:
    return spec.with_schedule(tuple(op for w in windows for op in w))


BASE = _random(1)
ON_DISK = _random(1, DURABILITIES[1])
AP = _random(1, mode=ACTIVE_PASSIVE)


@pytest.mark.parametrize(
    ("spec", "windows", "said"),
    [
        pytest.param(
            BASE,
            (fault_window("kill", "n1", 3, 2, "f1"), fault_window("pause", "n2", 4, 2, "f2")),
            "may not start while kill lasts",
            id="two-nodes-out-under-NO_SYNC",
        ),
        pytest.param(
            ON_DISK,
            (fault_window("kill", "n1", 3, 2, "f1"), fault_window("pause", "n1", 4, 2, "f2")),
            "may not start",
            id="one-node-twice-at-once",
        ),
        pytest.param(
            ON_DISK,
            (
                fault_window("kill", "n1", 3, 3, "f1"),
                fault_window("pause", "n2", 4, 1, "f2"),
                fault_window("isolate", "n3", 4.5, 1, "f3"),
            ),
            "may not start",
            id="three-nodes-out",
        ),
        pytest.param(
            BASE,
            (
                fault_window("cut", "client_to_n2", 3, 3, "f1"),
                fault_window("kill", "n2", 3.5, 1, "f2"),
                fault_window("kill", "@master", 4, 1, "f3"),
            ),
            "names a role while a fault that takes a node out lasts",
            id="a-role-while-a-node-is-out",
        ),
        pytest.param(
            BASE,
            (fault_window("kill", "n1", 3, 2, "f1"), fault_window("kill", "n2", 5.5, 2, "f2")),
            "0.5 s after f1 ends (at least 1 s)",
            id="no-quiet-between-two-kills",
        ),
        pytest.param(
            BASE,
            (fault_window("latency", "n1_to_n2", 3, 2, "f1", latency_ms=350, jitter_ms=100),),
            "not a fault `random` draws",
            id="node-latency-past-the-election-timeout",
        ),
        pytest.param(
            BASE,
            (fault_window("bandwidth", "n1_to_n2", 3, 2, "f1", rate_kbs=300),),
            "not a fault `random` draws",
            id="a-bandwidth-random-never-draws",
        ),
        pytest.param(
            BASE,
            (fault_window("disk_fill", "n1", 3, 2, "f1"),),
            "not a fault `random` draws",
            id="a-fault-outside-the-vocabulary",
        ),
        pytest.param(
            BASE,
            (fault_window("partition", "group", 3, 2, "f1", sides="n1|n2"),),
            "not a fault `random` draws",
            id="a-partition-that-leaves-a-node-out",
        ),
        pytest.param(
            BASE,
            (fault_window("kill", "n1", 1.0, 2, "f1"),),
            "outside 2–16 s of the load",
            id="before-the-first-moment",
        ),
        pytest.param(
            BASE,
            (fault_window("kill", "n1", 14, 3, "f1"),),
            "outside 2–16 s of the load",
            id="healed-too-late",
        ),
        pytest.param(
            BASE,
            (
                fault_window("transfer_master", "@replica:1", 3, 2, "f1"),
                fault_window("kill", "n2", 4, 1, "f2"),
            ),
            "may not start",
            id="a-kill-during-a-transfer",
        ),
        pytest.param(
            AP,
            (fault_window("kill", "n1", 3, 2, "f1"), fault_window("pause", "n2", 7, 2, "f2")),
            "2 s after f1 ends (at least 3 s)",
            id="active-passive-brokers-too-close",
        ),
        pytest.param(
            AP,
            (fault_window("cut", "client_to_n1", 3, 2, "f1"),),
            "not a fault `random` draws",
            id="active-passive-clients-reach-only-the-virtual-address",
        ),
    ],
)
def test_schedules_that_break_the_rule_are_refused(
    spec: RunSpec, windows: tuple[tuple[FaultOp, FaultOp], ...], said: str
) -> None:
    problem = rule_problem(_with(spec, *windows))
    assert problem is not None and said in problem, problem


def test_a_fault_never_healed_is_refused() -> None:
    start = FaultOp(3.0, "start", "pause", "n1", "f1")
    assert "never healed" in str(rule_problem(replace(BASE, schedule=(start,))))


def test_mixes_the_rule_allows() -> None:
    assert (
        rule_problem(
            _with(
                BASE,
                fault_window("kill", "n1", 3, 2, "f1"),
                fault_window("cut", "client_to_n2", 3.5, 2, "f2"),
                fault_window("kill", "n2", 6, 2, "f3"),
            )
        )
        is None
    )
    # With every copy on disk, two distinct nodes may be out at once, and back to back.
    assert (
        rule_problem(
            _with(
                ON_DISK,
                fault_window("kill", "n1", 3, 2, "f1"),
                fault_window("pause", "n2", 4, 2, "f2"),
                fault_window("kill", "n3", 6.1, 1, "f3"),
            )
        )
        is None
    )
    # A role, while only faults that take no node out last: the replicas trail, the master
    # (whichever node it is) is cut off.
    assert (
        rule_problem(
            _with(
                BASE,
                fault_window("latency", "n1_to_n2", 3, 6, "f1", latency_ms=150, jitter_ms=0),
                fault_window("latency", "n1_to_n3", 3, 6, "f2", latency_ms=150, jitter_ms=0),
                fault_window("isolate", "@master", 4, 3, "f3"),
            )
        )
        is None
    )
    assert (
        rule_problem(
            _with(
                AP,
                fault_window("kill", "@master", 3, 2, "f1"),
                fault_window("pause", "manager", 3.5, 2, "f2"),
                fault_window("kill", "n2", 8, 2, "f3"),
            )
        )
        is None
    )


def test_a_light_fault_may_name_roles_at_a_links_ends_and_nothing_else_may() -> None:
    """A straggler behind whichever node is master: latency is light wherever it lands, so a
    role may stand at either end of the link; a fault that takes a node out may not (the
    rule counts the nodes out by name), and a replica the topology lacks is refused."""
    slow = {"latency_ms": 150, "jitter_ms": 0}
    straggler = _with(
        BASE,
        fault_window("latency", "@master_to_@replica:2", 3, 6, "f1", **slow),
        fault_window("latency", "@replica:2_to_@master", 3, 6, "f2", **slow),
        fault_window("kill", "@master", 5, 2, "f3"),
    )
    assert rule_problem(straggler) is None
    for refused in (
        fault_window("latency", "@master_to_@replica:3", 3, 2, "f1", **slow),  # 2 replicas
        fault_window("latency", "@master_to_@master", 3, 2, "f1", **slow),
        fault_window("bandwidth", "@master_to_@replica:1", 3, 2, "f1", rate_kbs=8),
        fault_window("reset_peer", "@replica_to_@master", 3, 2, "f1", timeout_ms=0),
    ):
        assert "not a fault `random` draws" in str(rule_problem(_with(BASE, refused)))


def test_a_hosts_crash_is_its_links_cut_a_moment_before_its_kill() -> None:
    """`isolate N` from at most CRASH_LEAD_S before `kill N` until the kill's heal is one
    crash (what N had in flight dies with it): the rule counts it as the kill alone, in
    either design; an isolation of another node, or one that outlasts the kill, is not."""
    crash = (
        fault_window("isolate", "@master", 3.9, 2.1, "f1"),
        fault_window("kill", "@master", 4.0, 2.0, "f2"),
    )
    assert rule_problem(_with(BASE, *crash)) is None
    assert rule_problem(_with(AP, *crash)) is None
    for isolation in (
        fault_window("isolate", "@master", 3.5, 2.5, "f1"),  # too early: a fault of its own
        fault_window("isolate", "@master", 3.9, 3.0, "f1"),  # outlasts the kill
    ):
        said = rule_problem(_with(AP, isolation, crash[1]))
        assert said is not None and "f1" in said, said


def test_a_kill_as_a_hosts_crash_counts_as_the_kill_where_links_can_be_cut() -> None:
    """`kill` with `host: true` (its links cut first, in one step) is the same crash as the
    pair above: the rule counts it as a kill wherever the run's node links can be cut, in
    either design and whether it waits for a moment or not; nowhere else, and with no other
    parameter."""
    host = fault_window("kill", "@master", 4.0, 2.0, "f1", host=True)
    assert rule_problem(_with(BASE, host)) is None
    assert rule_problem(_with(AP, host)) is None
    waits = (
        FaultOp(4.0, "start", "kill", "@master", "f1", {"host": True}, "catchup", 2.0),
        FaultOp(8.0, "stop", "kill", "@master", "f1", {"host": True}, after_s=2.0),
    )
    assert rule_problem(_with(AP, waits)) is None
    # Broker-J's nodes on local processes dial each other with no proxy: no cut, no host crash
    local_jvm = _random(1, where=("qpid-broker-j", "process"))
    said = rule_problem(_with(local_jvm, host))
    assert said is not None and "not a fault `random` draws" in said, said
    for refused in (
        fault_window("kill", "@master", 4.0, 2.0, "f1", host="yes"),
        fault_window("kill", "@master", 4.0, 2.0, "f1", host=True, signal=9),
        fault_window("pause", "@master", 4.0, 2.0, "f1", host=True),
    ):
        said = rule_problem(_with(BASE, refused))
        assert said is not None and "not a fault `random` draws" in said, said
