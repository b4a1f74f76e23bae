"""`random` on hosts draws the faults only hosts have, and draws on the other backends exactly
what it drew before they existed (the failure database's ids and replays depend on that)."""

from __future__ import annotations

import hashlib
import json

from faults.schedule_check import check_schedule
from lab.ground.nodes import TargetTraits
from lab.ground.spec import RunSpec
from scenarios.catalog import scenario_named

# sha256 of the schedules `random` drew for seeds 0-399 on the process and docker backends,
# every target and mode, before hosts faults were added to its vocabulary (the same code on
# the branch it came from gives the same digest).
BEFORE_HOSTS = "6f5237c2c7b13618f0146d8a8cd24a1a50c17c361c170fe8c02b946472603477"
NODE_TOXICS = {"latency", "bandwidth", "timeout", "reset_peer"}


def _spec(seed: int, backend: str, target: str, mode: str = "replicated-group") -> RunSpec:
    scenario = scenario_named("random").in_mode(mode)
    return scenario.spec(seed, backend=backend, target=TargetTraits(target))


def test_the_other_backends_draw_what_they_drew_before_hosts_faults() -> None:
    digest = hashlib.sha256()
    for backend in ("process", "docker"):
        for target in ("broker_ref", "qpid-broker-j"):
            for mode in ("replicated-group", "active-passive"):
                if target != "broker_ref" and mode == "active-passive":
                    continue
                for seed in range(400):
                    schedule = _spec(seed, backend, target, mode).schedule
                    digest.update(json.dumps([op.to_json() for op in schedule]).encode())
    assert digest.hexdigest() == BEFORE_HOSTS


def _starts(spec: RunSpec) -> list[tuple[str, str, dict[str, object]]]:
    return [(op.fault, op.target, dict(op.params)) for op in spec.schedule if op.action == "start"]


def test_on_hosts_random_draws_netem_clocks_and_packet_filter_partitions() -> None:
    drawn: dict[str, set[str]] = {"broker_ref": set(), "qpid-broker-j": set()}
    for target, kinds in drawn.items():
        for seed in range(300):
            spec = _spec(seed, "ssh", target)
            check_schedule(spec.schedule, spec.topology.node_names, spec.workload.duration_s)
            for fault, link, params in _starts(spec):
                kinds.add(fault)
                if fault in NODE_TOXICS:  # no proxy on a node link between hosts
                    assert link.startswith("client_to_"), (seed, fault, link)
                if fault.startswith("clock_"):
                    assert params["monotonic"] is True
                if fault == "netem":
                    assert set(params) <= {"loss_pct", "duplicate_pct"} and any(params.values())
    host_only = {"netem", "clock_jump", "clock_drift", "clock_strobe"}
    splits = {"partition", "isolate", "one_way_partition"}
    assert host_only | splits | {"full_gc"} <= drawn["qpid-broker-j"]
    assert {"netem"} | splits <= drawn["broker_ref"]
    assert not drawn["broker_ref"] & {"clock_jump", "clock_drift", "clock_strobe", "full_gc"}
    for backend in ("process", "docker"):
        for seed in range(100):
            faults = {f for f, _, _ in _starts(_spec(seed, backend, "qpid-broker-j"))}
            assert not faults & host_only
