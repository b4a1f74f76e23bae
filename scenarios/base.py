"""A scenario: frozen data, a pure schedule function, and the verdict the documents predict."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from lab.ground.cluster_settings import MODES, Mode
from lab.ground.errors import UsageError
from lab.ground.faultops import FaultOp
from lab.ground.nodes import BROKER_REF_TRAITS, TargetTraits
from lab.ground.spec import Durability, GroupSettings, RunSpec, Topology, Workload
from lab.judge.prediction import Prediction

__all__ = [
    "WORK_S",
    "Scenario",
    "ScheduleFn",
    "fault_when",
    "fault_window",
    "scheduled",
    "spaced_out",
    "uniform",
]

# What a bound on the service's return adds to the run's timeouts it names
# (lab.judge.bounds): the brokers' and the clients' own work on the way back (a new
# master's recovery, a link attached, a loaded machine's scheduling).
WORK_S = 2.0


ScheduleFn = Callable[[RunSpec, random.Random], tuple[FaultOp, ...]]
"""A scenario's schedule: the run's spec and its one seeded random generator in, the fault
operations out (`fault_window` pairs, or `FaultOp`s). A pure function: the same seed always
gives the same schedule, so a run can be replayed."""


@dataclass(frozen=True)
class Scenario:
    """A situation to put a broker in, and what the documents predict of it: frozen data.

    Parameters:
        name: its name, as `lab run NAME` and `lab list` say it (an entry point of the
            `lab.scenarios` group must be registered under this name).
        summary: one line: what the run does, shown by `lab list`.
        prediction: what must hold for the verdict `held` (`Prediction`).
        schedule: the faults, as a function of the spec and the run's seeded random
            generator (`ScheduleFn`; `scheduled(…)` for one that is the same every seed).
        topology: how many nodes (`Topology`; n1, n2 …).
        workload: the clients: producers, consumers, rate, how long the load lasts.
        durability: the sync and acknowledgement policies the group runs with.
        group: the HA group's settings and its design (`mode`).
        predict: when the prediction depends on the run's settings (the durability
            triplet): the prediction for a spec, in place of `prediction`.
        backends: the backends whose clusters can apply every fault of the schedule.
        twin: the same situation in the other HA design (`--mode`).
        needs_spec: its schedule comes from an incident file only (`lab run --spec`).
        paced: its faults follow one another, each once the node before is back (a
            rolling restart): a target with longer restarts gets them spaced out.
        heal_after_restart: faults whose heal comes once a restarted node is back: a
            target with longer restarts gets those heals later.
        self_activated: the variant a target whose brokers activate themselves (Artemis)
            runs, with the prediction the documents make of it.
    """

    name: str
    summary: str
    prediction: Prediction
    schedule: ScheduleFn
    topology: Topology = field(default_factory=Topology)
    workload: Workload = field(default_factory=Workload)
    durability: Durability = field(default_factory=Durability)
    group: GroupSettings = field(default_factory=GroupSettings)
    # When the prediction depends on the run's settings (e.g. the durability triplet).
    predict: Callable[[RunSpec], Prediction] | None = None
    # The backends whose clusters can apply every fault of the schedule.
    backends: tuple[str, ...] = ("process", "docker", "ssh")
    # The same situation in the other HA design (an active-passive cluster's twin of a
    # replicated group's scenario), run with `--mode`.
    twin: Scenario | None = None
    # Its schedule comes from a spec file only (`lab run --spec FILE`): the incident.
    needs_spec: bool = False
    # Its faults follow one another, each meant to begin once the node before is back (a
    # rolling restart): a target whose nodes take longer to restart gets its restart
    # allowance between each fault and the next, not only at the end of the load.
    paced: bool = False
    # Faults whose heal is meant to come once a restarted node is back (an operator's
    # designation, cleared when both nodes run again): a target whose nodes take longer to
    # restart gets its restart allowance added to their end.
    heal_after_restart: tuple[str, ...] = ()
    # The same situation for an active-passive cluster whose brokers activate themselves (a
    # target like Artemis: no cluster manager promotes, none moves a virtual address), with
    # the prediction the documents make of it: a target that activates itself runs this.
    self_activated: Scenario | None = None

    @property
    def mode(self) -> Mode:
        return self.group.mode

    @property
    def modes(self) -> tuple[Mode, ...]:
        """The HA designs this scenario runs in, its own first."""
        return (self.mode,) if self.twin is None else (self.mode, self.twin.mode)

    def in_mode(self, mode: str | None) -> Scenario:
        """This scenario in `mode` (None: its own); a UsageError when it has no such twin."""
        if mode is None or mode == self.mode:
            return self
        if self.twin is not None and mode == self.twin.mode:
            return self.twin
        if mode not in MODES:
            raise UsageError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
        return _refuse_mode(self, mode)

    def spec(
        self,
        seed: int,
        *,
        backend: str = "process",
        target: TargetTraits = BROKER_REF_TRAITS,
        durability: Durability | None = None,
    ) -> RunSpec:
        """The run spec for a seed, with the schedule computed from it (a pure function).

        A target whose nodes take longer to restart (a JVM) gets its `restart_allowance_s`
        added to the load after the schedule is made: the faults fall at the same moments, and
        the service has time to come back before the load ends. A target whose brokers
        activate themselves runs the scenario's `self_activated` variant."""
        if target.activates_itself and self.self_activated is not None:
            return self.self_activated.spec(
                seed, backend=backend, target=target, durability=durability
            )
        base = RunSpec(
            scenario=self.name,
            seed=seed,
            target=target.name,
            backend=backend,
            topology=self.topology,
            durability=durability or self.durability,
            workload=self.workload,
            group=self.group,
            target_version=target.chosen_version,
            target_timeouts=target.timeouts,
        )
        schedule = self.schedule(base, random.Random(seed))
        extra = target.restart_allowance_s
        if not extra:
            return base.with_schedule(schedule)
        longer = replace(self.workload, duration_s=self.load_s(extra, len(schedule) // 2))
        return replace(base.with_schedule(self.slowed(schedule, extra)), workload=longer)

    def slowed(self, schedule: tuple[FaultOp, ...], extra_s: float) -> tuple[FaultOp, ...]:
        """The planned schedule for a target whose restarts take `extra_s` longer: a paced
        scenario's faults spaced out, and the heals that wait for a restart that much later."""
        if self.paced:
            schedule = spaced_out(schedule, extra_s)
        return tuple(
            replace(op, at_s=round(op.at_s + extra_s, 3))
            if op.action == "stop" and op.id in self.heal_after_restart
            else op
            for op in schedule
        )

    def load_s(self, restart_allowance_s: float, faults: int = 1) -> float:
        """How long the load lasts on a target with this restart allowance (`faults`: how
        many faults the schedule has, for a paced scenario)."""
        steps = max(1, faults) if self.paced else 1
        return self.workload.duration_s + restart_allowance_s * steps

    def refusal(self, backend: str) -> str | None:
        """Why this scenario cannot run on `backend` (one line), or None when it can."""
        if backend in self.backends:
            return None
        return (
            f"scenario {self.name!r} runs on the {' or '.join(self.backends)} backend, "
            f"not {backend!r} (use --backend {self.backends[0]})"
        )

    def prediction_for(self, spec: RunSpec) -> Prediction:
        """The prediction for this run's settings (its self-activated variant's for a run
        whose brokers activate themselves)."""
        variant = self.self_activated
        if variant is not None and spec.group.active_passive.self_activated:
            return variant.prediction_for(spec)
        return self.predict(spec) if self.predict is not None else self.prediction


def _refuse_mode(scenario: Scenario, mode: str) -> Scenario:
    raise UsageError(
        f"scenario {scenario.name!r} runs in {' or '.join(scenario.modes)} mode only, "
        f"not {mode} (see `lab list`)"
    )


def fault_window(
    fault: str,
    target: str,
    start_s: float,
    duration_s: float,
    fault_id: str,
    **params: int | float | str | bool,
) -> tuple[FaultOp, FaultOp]:
    """A fault applied at `start_s` and healed `duration_s` later: its two operations.

    Parameters:
        fault: the fault's name (`kill`, `pause`, `partition` …: docs/faults.md).
        target: what it strikes: a node (`n2`), a role resolved when it is applied
            (`@master`, `@replica:1`), a link (`client_to_@master`), or `group`.
        start_s: when it is applied, in seconds after the load started.
        duration_s: how long it lasts: it is healed `duration_s` seconds after `start_s`
            (a kill's node restarted, a pause resumed …). An incident file's step writes
            the same as two moments, `start_s` and `end_s` (= start_s + duration_s).
        fault_id: its id in the run (`f1` …): what a prediction's references name
            (`f1`, `master@f1`, `f1:end`), and the schedule's lines.
        **params: the fault's own parameters (`latency_ms=200`, `sides="n1|n2,n3"` …).

    Returns:
        The start operation and the stop (heal) operation.
    """
    start = FaultOp(
        at_s=start_s, action="start", fault=fault, target=target, id=fault_id, params=params
    )
    return start, replace(start, at_s=start_s + duration_s, action="stop")


def fault_when(
    when: str,
    within_s: float,
    fault: str,
    target: str,
    start_s: float,
    duration_s: float,
    fault_id: str,
    **params: int | float | str | bool,
) -> tuple[FaultOp, FaultOp]:
    """A fault that waits for the cluster: armed at `start_s`, it strikes when `when` happens,
    or `within_s` later at the latest, and is healed `duration_s` after it struck.

        fault_when("new-master", 10.0, "kill", "@master", 3.0, 2.0, "f1")

    kills whichever node becomes master next after 3 s (by 13 s at the latest), for 2 s.

    Parameters:
        when: what it waits for (lab.ground.faultops.TRIGGERS): `new-master` (a node has
            become master that was not master when it was armed), `catchup` (a replica or
            backup is catching up), `rejoined` (a node that was out is a replica again),
            `caught-up` (a node seen out or catching up since it was armed counts again: an
            active-passive backup `ready`, a replica back within 20 transactions of its
            master).
        within_s: how long it waits at most; then it strikes anyway.
        fault: as fault_window's.
        target: as fault_window's; a role is resolved when it strikes.
        start_s: when it is armed, in seconds after the load started.
        duration_s: how long it lasts once it struck. An incident file's step writes it
            `length_s`, beside `when` and `within_s`.
        fault_id: as fault_window's.
        **params: the fault's own parameters.

    Returns:
        The start operation and the stop (heal) operation; the stop's time is the latest
        the heal can come (`start_s + within_s + duration_s`).
    """
    start = FaultOp(
        at_s=start_s,
        action="start",
        fault=fault,
        target=target,
        id=fault_id,
        params=params,
        when=when,
        within_s=within_s,
    )
    stop = FaultOp(
        at_s=start_s + within_s + duration_s,
        action="stop",
        fault=fault,
        target=target,
        id=fault_id,
        params=params,
        after_s=duration_s,
    )
    return start, stop


def scheduled(*faults: FaultOp | Iterable[FaultOp]) -> ScheduleFn:
    """A schedule that is the same for every seed, for a scenario written by hand
    (`schedule=scheduled(fault_window(…), …)`).

    Parameters:
        *faults: the operations: `FaultOp`s, or `fault_window` pairs.

    Returns:
        A `ScheduleFn` that returns those operations whatever the seed.
    """
    ops: list[FaultOp] = []
    for item in faults:
        ops.extend([item] if isinstance(item, FaultOp) else item)
    fixed = tuple(ops)

    def schedule(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]:
        return fixed

    return schedule


def spaced_out(schedule: tuple[FaultOp, ...], extra_s: float) -> tuple[FaultOp, ...]:
    """Each fault, in the order they begin, `extra_s` later than the one before."""
    firsts: dict[str, float] = {}
    for op in sorted(schedule, key=lambda o: o.at_s):
        firsts.setdefault(op.id, op.at_s)
    order = {fault_id: i for i, fault_id in enumerate(firsts)}
    return tuple(replace(op, at_s=round(op.at_s + order[op.id] * extra_s, 3)) for op in schedule)


def uniform(rng: random.Random, low: float, high: float) -> float:
    """A time drawn from the run's random generator, for a schedule that varies by seed.

    Parameters:
        rng: the run's seeded random generator (a `ScheduleFn`'s second argument).
        low: the earliest time, in seconds.
        high: the latest time, in seconds.

    Returns:
        A time in [low, high] seconds, to the millisecond.
    """
    return round(rng.uniform(low, high), 3)
