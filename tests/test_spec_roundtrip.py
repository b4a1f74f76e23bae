"""spec.json says everything needed to run a scenario again: every scenario, in each of its
modes, on each backend it runs on, against each target, under every durability the seeds
allow, comes back from `to_json` → JSON text → `from_json` equal, and its scenario plans the
same schedule from what was read back (the schedule a replay runs is the one first planned)."""

from __future__ import annotations

import json
import random
import re
import subprocess
from dataclasses import fields, replace
from itertools import product
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab import __version__
from lab.ground.cluster_settings import MODES
from lab.ground.errors import InputError, UsageError
from lab.ground.nodes import TargetTraits
from lab.ground.spec import (
    ACK_POLICIES,
    SYNC_POLICIES,
    TARGETS,
    Durability,
    GroupSettings,
    RunSpec,
    SideQueue,
)
from lab.ground.spec_words import MAX_SEED, git_revision
from lab.run.incident import load_incident
from lab.targets.catalog import make_target
from lab.targets.protocol import traits_of
from scenarios.base import Scenario
from scenarios.catalog import RUNNABLE

SOURCE = Path("spec.json")

# Every durability the seeds allow: SYNC on the master only without coalescing-sync.
DURABILITIES = tuple(
    Durability(master, replica, ack, coalescing)
    for master, replica, ack, coalescing in product(
        SYNC_POLICIES, SYNC_POLICIES, ACK_POLICIES, (True, False)
    )
    if not (master == "SYNC" and coalescing)
)
TRAITS = {name: traits_of(make_target(name)) for name in TARGETS}
# (scenario, mode, backend): every way a runnable scenario can be run.
CELLS = tuple(
    (name, mode, backend)
    for name, scenario in sorted(RUNNABLE.items())
    for mode in scenario.modes
    for backend in scenario.in_mode(mode).backends
)


def _reloaded(spec: RunSpec) -> RunSpec:
    text = json.dumps(spec.to_json())  # what spec.json holds
    return RunSpec.from_json(json.loads(text), SOURCE)


def _planned(scenario: Scenario, spec: RunSpec) -> tuple[object, ...]:
    """The schedule `scenario` plans for `spec`, in spec.json's canonical form. A slow
    target's restart allowance was added to the load after planning, so it is planned on
    the load without it (the faults fall at the same moments on every target, but for a
    paced scenario's, which the allowance spaces out, and the heals that wait for a
    restart). Brokers that activate themselves run the scenario's self-activated variant."""
    if spec.group.active_passive.self_activated and scenario.self_activated is not None:
        scenario = scenario.self_activated
    extra = TRAITS[spec.target].restart_allowance_s
    added = scenario.load_s(extra, len(spec.schedule) // 2) - scenario.workload.duration_s
    load = replace(spec.workload, duration_s=spec.workload.duration_s - added)
    planning = replace(spec, workload=load, schedule=())
    planned = scenario.schedule(planning, random.Random(spec.seed))
    if extra:
        planned = scenario.slowed(planned, extra)
    return spec.with_schedule(planned).schedule


@settings(max_examples=300, deadline=None)
@given(
    cell=st.sampled_from(CELLS),
    target=st.sampled_from(TARGETS),
    durability=st.sampled_from(DURABILITIES),
    seed=st.integers(0, MAX_SEED),
)
def test_a_spec_comes_back_from_json_equal_and_plans_the_same_schedule(
    cell: tuple[str, str, str], target: str, durability: Durability, seed: int
) -> None:
    name, mode, backend = cell
    scenario = RUNNABLE[name].in_mode(mode)
    spec = scenario.spec(seed, backend=backend, target=TRAITS[target], durability=durability)
    assert (spec.target, spec.backend, spec.group.mode) == (target, backend, mode)
    assert spec.durability == durability

    again = _reloaded(spec)
    assert again == spec
    for part in fields(RunSpec):  # named one by one, so a failure says which part was lost
        assert getattr(again, part.name) == getattr(spec, part.name), part.name
    assert again.to_json() == spec.to_json()

    # The schedule planned again from what was read back is the one spec.json holds, and the
    # spec the scenario makes from the read-back settings is the same spec.
    assert _planned(scenario, again) == spec.schedule
    made = scenario.spec(
        again.seed, backend=again.backend, target=TRAITS[again.target], durability=again.durability
    )
    assert replace(made, git_revision=again.git_revision) == again


def test_the_cells_cover_every_mode_backend_target_and_durability() -> None:
    """The property above draws from all of them (a lost cell would go untested)."""
    assert {mode for _, mode, _ in CELLS} == set(MODES)
    assert {backend for _, _, backend in CELLS} == {"process", "docker", "ssh"}
    assert set(TRAITS) == {"broker_ref", "qpid-broker-j", "artemis", "rabbitmq"}
    assert len(DURABILITIES) == 3 * 3 * 3 * 2 - 3 * 3  # SYNC on the master needs no coalescing
    assert len({d.triplet for d in DURABILITIES}) == 27
    assert {name for name, _, _ in CELLS} == set(RUNNABLE)


@settings(max_examples=100, deadline=None)
@given(
    durability=st.sampled_from(DURABILITIES),
    target=st.sampled_from(TARGETS),
    backend=st.sampled_from(("process", "docker")),
    side=st.one_of(
        st.none(),
        st.builds(
            SideQueue,
            queue=st.sampled_from(("side", "other")),
            replicate=st.sampled_from((None, "none", "configuration", "all")),
            durable=st.booleans(),
        ),
    ),
    seed=st.integers(0, MAX_SEED),
)
def test_every_setting_that_differs_from_the_default_survives_the_round_trip(
    durability: Durability, target: str, backend: str, side: SideQueue | None, seed: int
) -> None:
    """Settings no scenario uses yet (a side queue, priorities, a designated primary) come
    back too: from_json reads every field, not only those the catalogue sets."""
    base = RUNNABLE["master-failure"].spec(seed, backend=backend, target=TRAITS[target])
    group = replace(base.group, priority={"n1": 3, "n3": 0}, designated_primary=("n2",))
    spec = replace(
        base,
        durability=durability,
        workload=replace(base.workload, side=side, spread_producers=True),
        group=group,
        lab_version="0.0.1",  # a run made by an older lab reads back as made
        git_revision="0" * 40,
    )
    assert _reloaded(spec) == spec


def test_an_incident_file_with_every_setting_reads_back_what_it_says(tmp_path: Path) -> None:
    incident = tmp_path / "incident.toml"
    incident.write_text(
        """
scenario = "incident"
seed = 11
target = "qpid-broker-j"
backend = "docker"
[topology]
nodes = 3
[durability]
master_sync = "SYNC"
replica_sync = "WRITE_NO_SYNC"
ack_policy = "ALL"
coalescing_sync = false
[group]
mode = "active-passive"
[[schedule]]
at_s = 2.0
action = "start"
fault = "kill"
target = "@master"
id = "f1"
[[schedule]]
at_s = 4.0
action = "stop"
fault = "kill"
target = "@master"
id = "f1"
""",
        encoding="utf-8",
    )
    spec = load_incident(incident)
    assert (spec.target, spec.backend, spec.group.mode) == (
        "qpid-broker-j",
        "docker",
        "active-passive",
    )
    assert spec.durability == Durability("SYNC", "WRITE_NO_SYNC", "ALL", False)
    assert [(op.at_s, op.action, op.fault) for op in spec.schedule] == [
        (2.0, "start", "kill"),
        (4.0, "stop", "kill"),
    ]
    assert _reloaded(spec) == spec
    assert TargetTraits(spec.target) == TargetTraits("qpid-broker-j")


def test_a_spec_without_its_optional_parts_reads_as_the_defaults() -> None:
    read = RunSpec.from_json({"scenario": "incident", "seed": "4"}, SOURCE)
    assert read == RunSpec("incident", 4)
    assert (read.target, read.backend, read.lab_version) == ("broker_ref", "process", __version__)
    assert read.schedule == () and read.git_revision is None


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (
            lambda: Durability("SOMETIMES", "NO_SYNC", "ALL"),  # type: ignore[arg-type]
            r"^bad durability SOMETIMES,NO_SYNC,ALL: sync policies are SYNC, WRITE_NO_SYNC, "
            r"NO_SYNC$",
        ),
        (
            lambda: Durability("NO_SYNC", "NO_SYNC", "MOST"),  # type: ignore[arg-type]
            r"^bad durability NO_SYNC,NO_SYNC,MOST: ack policies are ALL, SIMPLE_MAJORITY, NONE$",
        ),
        (
            lambda: Durability.parse("SYNC,ALL"),
            r"give <master sync>,<replica sync>,<ack policy>, "
            r"e\.g\. NO_SYNC,NO_SYNC,SIMPLE_MAJORITY$",
        ),
        (
            lambda: GroupSettings(mode="both"),  # type: ignore[arg-type]
            r"^unknown mode 'both' \(known: replicated-group, active-passive\)$",
        ),
        (lambda: SideQueue("s", replicate="most"), r"^side queue replicate 'most': one of "),
        (
            lambda: Durability("SYNC", "NO_SYNC", "ALL"),
            r"^durability SYNC,NO_SYNC,ALL with coalescing-sync cannot be used "
            r"\(master sync policy SYNC needs --no-coalescing\)$",
        ),
    ],
)
def test_bad_settings_are_refused_saying_what_is_allowed(make: Any, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        make()


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=lab", "-c", "user.email=lab@127.0.0.1", "-C", str(folder), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_the_git_revision_is_the_checkouts_head_or_none(tmp_path: Path) -> None:
    assert git_revision(tmp_path) is None  # not a checkout
    _git(tmp_path, "init", "-q")
    assert git_revision(tmp_path) is None  # a checkout with no commit yet
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "first")
    head = _git(tmp_path, "rev-parse", "HEAD")
    assert re.fullmatch(r"[0-9a-f]{40}", head)
    assert git_revision(tmp_path) == head
    assert git_revision(tmp_path / "missing") is None


def test_a_targets_own_timeouts_go_through_an_incident_file_and_bad_ones_are_refused(
    tmp_path: Path,
) -> None:
    spec = RUNNABLE["random"].spec(7, target=TRAITS["rabbitmq"])
    assert dict(spec.target_timeouts)["election timeout"] == 5.0
    written = tmp_path / "spec.json"
    written.write_text(json.dumps(spec.to_json()), encoding="utf-8")
    assert load_incident(written).target_timeouts == spec.target_timeouts
    bad = {**spec.to_json(), "target_timeouts": {"lease": -1}}
    written.write_text(json.dumps(bad), encoding="utf-8")
    said = r"spec\.json: target_timeouts\.lease: seconds above 0, not -1$"
    with pytest.raises(InputError, match=said):
        load_incident(written)
