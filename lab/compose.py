"""How a run is put together from names: its scenario, its target and its cluster.

The CLI, the pytest plugin and campaigns compose runs here, once per run, and check
everything before anything starts: an unknown scenario, target or backend, or a scenario
that cannot run on the backend, is a one-line UsageError.
"""

from __future__ import annotations

from pathlib import Path

from lab.backends.catalog import make_cluster
from lab.ground.cluster_settings import ACTIVE_PASSIVE
from lab.ground.errors import UsageError
from lab.ground.events import Events
from lab.ground.spec import BACKENDS, RunSpec
from lab.run.cluster import Cluster, ClusterFactory, RunParts
from lab.targets.catalog import make_target
from lab.targets.protocol import ChecksRuns, Target, traits_of
from scenarios.catalog import scenario_named

__all__ = ["parts_for"]


def parts_for(scenario: str, backend: str, target: str, mode: str | None = None) -> RunParts:
    """The parts of a run of `scenario` against `target` on `backend`, in `mode` (None: the
    scenario's own HA design, or its active-passive twin for a target whose brokers
    activate themselves), checked."""
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    node_target = make_target(target)
    traits = traits_of(node_target)
    named = scenario_named(scenario)
    if mode is None and traits.activates_itself and ACTIVE_PASSIVE in named.modes:
        mode = ACTIVE_PASSIVE  # a target whose brokers activate themselves has no other HA
    chosen = named.in_mode(mode)
    refusal = chosen.refusal(backend)
    if refusal is not None:
        raise UsageError(refusal)
    return RunParts(chosen, traits, _cluster_factory(node_target))


def _cluster_factory(target: Target) -> ClusterFactory:
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
        )

    return make


def _fills_a_disk(spec: RunSpec) -> bool:
    return any(op.fault == "disk_fill" for op in spec.schedule)
