"""The one command that reproduces a run, for the CLI, the runner, Allure and the plugin.

A run whose spec is exactly what `lab run SCENARIO --seed N …` makes (its schedule comes
from its scenario and seed) is reproduced by that command, with every setting that
differs from the defaults: backend, target, durability. Any other run (a replay of an
edited spec, a schedule written by hand) is reproduced by `lab replay FOLDER`, never by a
`lab run` that would run a different schedule.

The `lab` of the command is the one running now, as a person would type it where the line
is shown (lab.ground.invocation): `lab` when that is the one on PATH, else its own path.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

from lab.ground.errors import LabError
from lab.ground.invocation import shown_command
from lab.ground.nodes import TargetTraits
from lab.ground.spec import RunSpec
from lab.run.cluster import RunParts
from scenarios.base import Scenario
from scenarios.catalog import scenario_named

__all__ = ["reproduce_command"]


def _made_from_seed(
    spec: RunSpec, scenario: Scenario, target: TargetTraits, settings: dict[str, str]
) -> bool:
    made = scenario.spec(spec.seed, backend=spec.backend, target=target, durability=spec.durability)
    made = made.with_target_settings(settings)
    return replace(made, lab_version=spec.lab_version, git_revision=spec.git_revision) == spec


def _user_settings(spec: RunSpec, scenario: Scenario, target: TargetTraits) -> dict[str, str]:
    """The target settings the run has beyond those its scenario gives (`--target-setting`)."""
    made = scenario.spec(spec.seed, backend=spec.backend, target=target, durability=spec.durability)
    own = made.group.target_context.get(spec.target, {})
    given = spec.group.target_context.get(spec.target, {})
    return {k: v for k, v in given.items() if own.get(k) != v}


def _registered(name: str) -> Scenario | None:
    try:
        return scenario_named(name)
    except LabError:  # unknown, or its package's entry point is broken
        return None


def reproduce_command(
    spec: RunSpec, folder: Path, parts: RunParts | None = None, *, lab: str | None = None
) -> str:
    """`lab run …` when the spec comes from its scenario and seed (given the parts the run
    was made of), else `lab replay FOLDER`; `lab`: how the lab is typed (default: the one
    running now, lab.ground.invocation)."""
    lab = shown_command("lab") if lab is None else lab
    replay = f"{lab} replay {shlex.quote(str(folder.absolute()))}"
    if parts is not None and parts.hosts_file is not None:
        replay += f" --hosts {shlex.quote(str(parts.hosts_file))}"
    if parts is None:
        return replay
    scenario, target = parts.scenario, parts.target
    if scenario.needs_spec:  # an incident: its schedule is the file's
        return replay
    if scenario.name != spec.scenario or target.name != spec.target:
        return replay
    base = _registered(spec.scenario)
    if base is None or scenario not in (base, base.twin):  # a scenario no `lab run` knows
        return replay
    settings = _user_settings(spec, scenario, target)
    if not _made_from_seed(spec, scenario, target, settings):
        return replay
    words = ["run", spec.scenario, "--seed", str(spec.seed)]
    if spec.backend != "process":
        words += ["--backend", spec.backend]
    if parts.hosts_file is not None:
        words += ["--hosts", str(parts.hosts_file)]
    if spec.target_ref != "broker_ref":
        words += ["--target", spec.target_ref]
    for key, value in sorted(settings.items()):
        words += ["--target-setting", f"{key}={value}"]
    if spec.group.mode != base.mode:
        words += ["--mode", spec.group.mode]
    if spec.durability != scenario.durability:
        coalescing = "--coalescing" if spec.durability.coalescing_sync else "--no-coalescing"
        words += ["--durability", spec.durability.triplet, coalescing]
    return f"{lab} {shlex.join(words)}"
