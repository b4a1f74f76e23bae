"""How a run is put together from names: its scenario, its target and its cluster.

The CLI, the pytest plugin and campaigns compose runs here, once per run, and check
everything before anything starts: an unknown scenario, target or backend, or a scenario
that cannot run on the backend, is a one-line UsageError. Scenarios and targets are found
in their registries (scenarios.catalog, lab.targets.catalog: the lab's own, then installed
packages' entry points); a target is named `NAME` or `NAME@VERSION`.

    parts_for("master-failure", "process", "qpid-broker-j@9.1.0")
    parts_of(scenario, "process", "broker_ref")     a Scenario object (a user's test file)
    judging_of(spec)                                what judging a recorded run needs
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lab.backends.catalog import make_cluster
from lab.ground.cluster_settings import ACTIVE_PASSIVE
from lab.ground.errors import UsageError
from lab.ground.events import Events
from lab.ground.extras import DOCKER, HOSTS, Extra, require
from lab.ground.nodes import TargetTraits
from lab.ground.spec import BACKENDS, TARGETS, RunSpec
from lab.judge.bounds import Timings
from lab.judge.prediction import Prediction
from lab.run.cluster import Cluster, ClusterFactory, RunParts
from lab.targets.catalog import make_target
from lab.targets.protocol import ChecksRuns, ServiceTimings, Target, traits_of
from scenarios.base import Scenario
from scenarios.catalog import scenario_named

if TYPE_CHECKING:
    from lab.backends.ssh.hosts_file import Inventory

__all__ = ["clock_mode", "judging_of", "parts_for", "parts_of", "read_hosts"]

CLOCK_FAULTS = frozenset({"clock_jump", "clock_drift", "clock_strobe"})


_BACKEND_EXTRAS: dict[str, Extra] = {"docker": DOCKER, "ssh": HOSTS}


def read_hosts(backend: str, hosts_file: Path | None) -> Inventory | None:
    """The hosts file, read and checked whole, for the hosts backend (which needs one); a
    hosts file for another backend is a UsageError."""
    if hosts_file is None:
        if backend == "ssh":
            raise UsageError("--backend ssh needs a hosts file: --hosts FILE (see docs/hosts.md)")
        return None
    if backend != "ssh":
        raise UsageError(f"--hosts is for --backend ssh, not {backend}")
    from lab.backends.ssh.hosts_file import read_hosts_file

    return read_hosts_file(hosts_file)


def parts_for(
    scenario: str,
    backend: str,
    target: str,
    mode: str | None = None,
    hosts_file: Path | None = None,
) -> RunParts:
    """The parts of a run of `scenario` against `target` (`NAME[@VERSION]`) on `backend`,
    in `mode` (None: the scenario's own HA design, or its active-passive twin for a target
    whose brokers activate themselves), checked; the hosts backend's hosts file read now."""
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    return parts_of(scenario_named(scenario), backend, target, mode, hosts_file)


def parts_of(
    scenario: Scenario,
    backend: str,
    target: str,
    mode: str | None = None,
    hosts_file: Path | None = None,
) -> RunParts:
    """As parts_for, for a scenario given as an object rather than by name."""
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    if backend in _BACKEND_EXTRAS:  # before anything is read or fetched
        require(_BACKEND_EXTRAS[backend], f"the {backend} backend (--backend {backend})")
    node_target = make_target(target)
    traits = traits_of(node_target)
    if mode is None and traits.activates_itself and ACTIVE_PASSIVE in scenario.modes:
        mode = ACTIVE_PASSIVE  # a target whose brokers activate themselves has no other HA
    chosen = scenario.in_mode(mode)
    refusal = chosen.refusal(backend)
    if refusal is not None:
        raise UsageError(refusal)
    _check_images(backend, traits.name, traits.chosen_version)
    hosts = read_hosts(backend, hosts_file)
    factory = _cluster_factory(node_target, hosts)
    timings = _timings_factory(node_target, traits)
    hosts_path = hosts_file if hosts else None
    return RunParts(chosen, traits, factory, hosts_path, timings, node_target.prepare)


def judging_of(spec: RunSpec) -> tuple[Prediction, TargetTraits, Timings]:
    """What judging a run of `spec` needs, as the lab is now: its prediction, its target's
    traits (with the declared deviations) and its timeouts. Nothing is started or fetched;
    an unknown scenario or target is a UsageError."""
    node_target = make_target(spec.target_ref)
    traits = traits_of(node_target)
    scenario = scenario_named(spec.scenario).in_mode(spec.group.mode or None)
    timings = _timings_factory(node_target, traits)(spec)
    return scenario.prediction_for(spec), traits, timings


def _check_images(backend: str, target: str, version: str | None) -> None:
    """The Docker backend runs the images the lab builds: its own targets, at their default
    versions (lab.backends.docker.images)."""
    if backend != "docker":
        return
    if target not in TARGETS:
        raise UsageError(
            f"target {target!r} comes from outside the lab, and the docker backend runs only "
            "the images the lab builds for its own targets: use --backend process"
        )
    if version is not None:
        raise UsageError(
            f"{target}@{version}: the docker backend's images hold each target's default "
            "version only: run other versions with --backend process"
        )


def _timings_factory(target: Target, traits: TargetTraits) -> Callable[[RunSpec], Timings]:
    """A run's timeouts: the target's own model of its group's, when it has one."""

    def timings(spec: RunSpec) -> Timings:
        if not isinstance(target, ServiceTimings):
            return Timings.of(spec, traits)
        own = target.service_timings(spec.group, spec.topology.nodes)
        return Timings.of(spec, traits, own)

    return timings


def clock_mode(spec: RunSpec) -> str | None:
    """How the hosts backend starts its nodes under libfaketime for this run: not at all
    (no clock fault), or leaving their monotonic clock alone ("realtime") unless a clock fault
    says `monotonic = true` ("monotonic")."""
    clocks = [op for op in spec.schedule if op.action == "start" and op.fault in CLOCK_FAULTS]
    if not clocks:
        return None
    return "monotonic" if any(op.params.get("monotonic") for op in clocks) else "realtime"


def _cluster_factory(target: Target, hosts: Inventory | None = None) -> ClusterFactory:
    def make(spec: RunSpec, work_dir: Path, events: Events) -> Cluster:
        if isinstance(target, ChecksRuns):  # a fault or a workload it cannot express
            target.check_run(spec)
        return make_cluster(
            spec.backend,
            target,
            spec.topology,
            spec.durability,
            work_dir,
            events=events,
            group=spec.group,
            disk_mb=target.data_disk_mb if _fills_a_disk(spec) else None,
            hosts=hosts,
            clock=clock_mode(spec) if spec.backend == "ssh" else None,
        )

    return make


def _fills_a_disk(spec: RunSpec) -> bool:
    return any(op.fault == "disk_fill" for op in spec.schedule)
