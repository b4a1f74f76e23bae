"""Bounds on the service's return from the run's configured timeouts (lab.judge.bounds):
each target's model of its group's waits, the clients' way back, the sum a reason shows."""

from __future__ import annotations

import pytest

from lab.compose import parts_for
from lab.ground.nodes import TargetTraits
from lab.ground.spec import GroupSettings, RunSpec, Topology, Workload
from lab.judge.bounds import CLIENT_BACKOFF_MAX_S, Timing, Timings, broker_ref_timings
from lab.targets.brokerj.config import je_service_timings
from scenarios.catalog import scenario_named


def test_the_clients_constants_are_the_clients_own() -> None:
    from clients.workload import Backoff

    assert Backoff().delay(99) == CLIENT_BACKOFF_MAX_S


def test_broker_refs_group_waits_an_election_timeout_and_its_ranks() -> None:
    found = broker_ref_timings(GroupSettings(election_timeout_s=0.6), 3)
    assert (found["silence"].seconds, found["election"].seconds) == (0.6, 1.2)
    assert found["primary"].seconds == 0.6


def test_broker_js_waits_are_the_je_timeouts_the_lab_gives_it() -> None:
    found = je_service_timings(GroupSettings(election_timeout_s=0.6), 3)
    assert found["silence"] == Timing(2.0, "je.rep.replicaTimeout")
    assert found["election"] == Timing(4.0, "2 rounds × je.rep.electionsOpenTimeout")
    assert found["primary"].seconds == 8.0  # the round under way, then 1 + 2 retries
    # a scenario's own context wins (split-brain's short elections, no primary retries)
    split = scenario_named("split-brain").group
    mine = je_service_timings(split, 2)
    assert (mine["election"].seconds, mine["primary"].seconds) == (1.0, 1.0)
    assert "je.rep.electionsPrimaryRetries 0" in mine["primary"].source


def test_a_bound_adds_the_named_timeouts_the_clients_way_back_and_a_restart() -> None:
    spec = RunSpec("master-failure", 1, topology=Topology(nodes=3), workload=Workload())
    timings = Timings.of(spec, TargetTraits("t", restart_allowance_s=15.0))
    assert timings.values["reconnect"].seconds == 2 * 2.0 + CLIENT_BACKOFF_MAX_S
    bound = timings.bound(2.0, ("silence", "election", "reconnect"))
    assert bound.seconds == 2.0 + 0.6 + 1.2 + 4.25
    assert bound.describe() == (
        "2 s + silence 0.6 s (the election timeout) + election 1.2 s (the election timeout, "
        "and half of it for each of 2 lower ranks) + reconnect 4.25 s (2 × the clients' "
        "connect timeout 2 s + their longest back-off 0.25 s)"
    )
    assert timings.bound(2.0, ("reconnect",), restarted=True).seconds == 2.0 + 4.25 + 15.0
    no_heartbeat = Timings.of(RunSpec("x", 1, topology=Topology(nodes=2), workload=Workload(
        heartbeat_s=0.0)))  # fmt: skip
    assert no_heartbeat.values["reconnect"].seconds == 5.0 + CLIENT_BACKOFF_MAX_S


def test_a_target_without_a_model_gets_its_election_allowance_once() -> None:
    spec = RunSpec("master-failure", 1, topology=Topology(nodes=3))
    timings = Timings.of(spec, TargetTraits("other", election_allowance_s=5.0))
    assert timings.bound(2.0, ("silence", "election")).seconds == 2.0 + 0.6 + 1.2 + 5.0
    assert timings.bound(2.0, ("reconnect",)).seconds == 2.0 + 4.25


def test_each_run_is_judged_with_its_targets_own_model() -> None:
    broker_j = parts_for("master-failure", "process", "qpid-broker-j")
    spec = broker_j.scenario.spec(7, target=broker_j.target)
    bound = broker_j.timings_of(spec).bound(2.0, ("silence", "election", "reconnect"))
    assert bound.seconds == 2.0 + 2.0 + 4.0 + 4.25
    assert "je.rep.replicaTimeout" in bound.describe()
    reference = parts_for("master-failure", "process", "broker_ref")
    spec = reference.scenario.spec(7, target=reference.target)
    assert reference.timings_of(spec).bound(2.0, ("election",)).seconds == 3.2


@pytest.mark.parametrize(("name", "fault"), [("two-node-master-failure", "f2"),
                                             ("quorum-override", "f3")])  # fmt: skip
def test_an_operators_heal_waits_until_a_slower_targets_nodes_are_back(
    name: str, fault: str
) -> None:
    """J2 clears the replica's designation once the old master is back, J7 reverts the
    override as the nodes return: on Broker-J (a JVM restarts 15 s slower) that much later,
    so the designated primary's (the survivor's) election fits before it."""
    scenario = scenario_named(name)
    quick = {(op.id, op.action): op.at_s for op in scenario.spec(7).schedule}
    slow = scenario.spec(7, target=TargetTraits("qpid-broker-j", restart_allowance_s=15.0))
    later = {(op.id, op.action): op.at_s for op in slow.schedule}
    assert later[(fault, "stop")] == round(quick[(fault, "stop")] + 15.0, 3)
    assert {k: v for k, v in later.items() if k != (fault, "stop")} == {
        k: v for k, v in quick.items() if k != (fault, "stop")
    }
    assert later[(fault, "stop")] < slow.workload.duration_s  # healed before the load ends
