"""The lab used from a user's own code: one run of a scenario named in a registry, of an
incident file, or of a `Scenario` written in a test file, checked before anything starts.

    planned = plan_run(what, seed=7, backend="process", target="qpid-broker-j@9.1.0",
                       work_dir=tmp)     UsageError (what `lab run` refuses), SetupError
                                         (a target's distribution that cannot be fetched)
    outcome = run(what, runs_dir, seed=7, …)       plan_run, then the run: a RunOutcome

`what` is a scenario's name (the lab's own or an installed package's: `lab list`), a
`pathlib.Path` to an incident file (TOML or JSON: docs/campaigns.md), or a `Scenario`
object. An incident file gives its own settings; the target and backend it leaves out are
the ones given here. The pytest plugin's `lab_run` fixture is this, run into the test's
own folder (lab.pytest_plugin).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lab.compose import parts_for, parts_of
from lab.ground.errors import LabError, UsageError
from lab.ground.spec import Durability, RunSpec
from lab.ground.spec_words import split_target
from lab.run.cluster import RunParts
from lab.run.incident import load_incident
from lab.run.progress import Progress
from lab.run.runner import RunOutcome, run_scenario
from lab.targets.catalog import make_target
from lab.targets.protocol import traits_of
from lab.targets.suite import refusal_check
from scenarios.base import Scenario
from scenarios.catalog import scenario_named

__all__ = ["Planned", "Runnable", "index_target", "label_of", "plan_run", "run"]

Runnable = str | Path | Scenario
"""What a run can be made of: a scenario's name, an incident file, or a Scenario."""


@dataclass(frozen=True)
class Planned:
    """A run checked and ready: its spec (the schedule made) and its parts."""

    spec: RunSpec
    parts: RunParts

    @property
    def registered(self) -> bool:
        """Whether `lab run` and `lab replay` know its scenario by name (a Scenario written
        in a test file is known to its test only)."""
        try:
            found = scenario_named(self.spec.scenario)
        except UsageError:
            return False
        return self.parts.scenario in (found, found.twin)


def label_of(what: Runnable) -> str:
    """A name for what is run, before it is planned (a refusal's index line)."""
    if isinstance(what, Scenario):
        return what.name
    return what.stem if isinstance(what, Path) else what


def index_target(ref: str) -> dict[str, str]:
    """`{"target": NAME, "target_version": VERSION}` for a suite's index line: the version
    the target runs, also when none is named (left out for a target without versions, and
    for one that cannot be made: its refusal says why)."""
    name, version = split_target(ref) if ref.count("@") == 1 else (ref, None)
    if version is None:
        with contextlib.suppress(LabError):
            version = traits_of(make_target(name)).version
    return {"target": name, **({"target_version": version} if version else {})}


def plan_run(
    what: Runnable,
    *,
    seed: int | None = None,
    backend: str = "process",
    target: str = "broker_ref",
    mode: str | None = None,
    durability: Durability | None = None,
    work_dir: Path,
    hosts_file: Path | None = None,
    settings: Mapping[str, str] | None = None,
) -> Planned:
    """The run's spec and parts, refused as `lab run` refuses (UsageError) or when the
    target cannot be had (SetupError); `work_dir` holds the probe cluster's plan;
    `hosts_file`: the hosts backend's; `settings`: the target's own (`--target-setting`)."""
    if isinstance(what, Path):
        asked = (("seed", seed), ("mode", mode), ("durability", durability))
        given = [name for name, value in asked if value is not None]
        if given:
            raise UsageError(f"{what}: an incident file gives its own {given[0]}")
        spec = load_incident(what, {"target": target, "backend": backend})
        ref, mode_of = spec.target_ref, spec.group.mode
        parts = parts_for(spec.scenario, spec.backend, ref, mode_of, hosts_file)
    else:
        scenario = scenario_named(what) if isinstance(what, str) else what
        if scenario.needs_spec:
            raise UsageError(f"scenario {scenario.name!r} runs an incident file: give its Path")
        parts = parts_of(scenario, backend, target, mode, hosts_file)
        spec = parts.scenario.spec(
            seed or 0, backend=backend, target=parts.target, durability=durability
        )
    if settings:
        spec = spec.with_target_settings(dict(settings))
    refusal_check(spec, parts, work_dir)
    parts.prepare()  # a target's distribution, fetched on first use
    return Planned(spec, parts)


def run(
    what: Runnable,
    runs_dir: Path,
    *,
    seed: int | None = None,
    backend: str = "process",
    target: str = "broker_ref",
    mode: str | None = None,
    durability: Durability | None = None,
    progress: Progress | None = None,
    hosts_file: Path | None = None,
    settings: Mapping[str, str] | None = None,
) -> RunOutcome:
    """Run a scenario, an incident file or a `Scenario` into a new folder under `runs_dir`,
    as `lab run` does; what it cannot run is refused before anything starts.

    Parameters:
        what: a scenario's name (the lab's own or an installed package's: `lab list`), a
            `Path` to an incident file (TOML or JSON: docs/campaigns.md), or a `Scenario`
            object.
        runs_dir: the folder the run folder goes under (`<runs_dir>/<scenario>/<time>-<seed>`).
        seed: the seed of the run's random generator, hence its schedule (None: 0). An
            incident file gives its own.
        backend: `process`, `docker` or `ssh` (with `hosts_file`).
        target: `NAME` or `NAME@VERSION` (`lab list` shows the targets and versions).
        mode: the HA design for a scenario with a twin (`active-passive`); None: its own.
        durability: the group's durability, in place of the scenario's.
        progress: where the run says what happens (phases, faults); None: nowhere.
        hosts_file: the hosts file of the `ssh` backend (docs/hosts.md).
        settings: the target's own settings (`--target-setting KEY=VALUE`).

    Returns:
        What the run left: its verdict, checker's result, figures, events and folder.

    Raises:
        UsageError: what `lab run` refuses (an unknown name, a fault the backend cannot
            apply, a target that cannot form the group …), before anything starts.
        SetupError: something the run needs cannot be installed or found.
        PluginError: an entry point that cannot be loaded.
    """
    planned = plan_run(
        what,
        seed=seed,
        backend=backend,
        target=target,
        mode=mode,
        durability=durability,
        work_dir=runs_dir / ".probe",
        hosts_file=hosts_file,
        settings=settings,
    )
    return run_scenario(planned.spec, planned.parts, runs_dir, progress=progress)
