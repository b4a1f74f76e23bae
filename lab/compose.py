"""How a run is put together from names: its scenario, its target and its cluster.

The CLI, the pytest plugin and campaigns compose runs here, once per run, and check
everything before anything starts: an unknown scenario, target or backend, or a scenario
that cannot run on the backend, is a one-line UsageError. Scenarios and targets are found
in their registries (scenarios.catalog, lab.targets.catalog: the lab's own, then installed
packages' entry points); a target is named `NAME` or `NAME@VERSION`.

    parts_for("master-failure", "process", "qpid-broker-j@9.1.0")
    parts_of(scenario, "process", "broker_ref")     a Scenario object (a user's test file)
"""

from __future__ import annotations

from pathlib import Path

from lab.backends.catalog import make_cluster
from lab.ground.errors import UsageError
from lab.ground.events import Events
from lab.ground.spec import BACKENDS, TARGETS, RunSpec
from lab.run.cluster import Cluster, ClusterFactory, RunParts
from lab.targets.catalog import make_target
from lab.targets.protocol import Target, traits_of
from scenarios.base import Scenario
from scenarios.catalog import scenario_named

__all__ = ["parts_for", "parts_of"]


def parts_for(scenario: str, backend: str, target: str, mode: str | None = None) -> RunParts:
    """The parts of a run of `scenario` against `target` (`NAME[@VERSION]`) on `backend`,
    in `mode` (None: the scenario's own HA design), checked."""
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    return parts_of(scenario_named(scenario), backend, target, mode)


def parts_of(scenario: Scenario, backend: str, target: str, mode: str | None = None) -> RunParts:
    """As parts_for, for a scenario given as an object rather than by name."""
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    chosen = scenario.in_mode(mode)
    refusal = chosen.refusal(backend)
    if refusal is not None:
        raise UsageError(refusal)
    node_target = make_target(target)
    traits = traits_of(node_target)
    _check_images(backend, traits.name, traits.chosen_version)
    return RunParts(chosen, traits, _cluster_factory(node_target), node_target.prepare)


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


def _cluster_factory(target: Target) -> ClusterFactory:
    def make(spec: RunSpec, work_dir: Path, events: Events) -> Cluster:
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
