"""What a run showed, gathered once from its events and figures for the judge.

Nodes are referred to as a scenario writes them before the run, when roles are not
yet known: `n2` (a node by name), `f1` (the node fault f1 was applied to, after
`@master` / `@replica` were resolved) or `master@f1` (the node that was MASTER when
f1 was applied). Moments are `f1:start` and `f1:end`, in seconds since the run began.
A fault the nemesis skipped (its selector found no node: `fault.skipped`) is in `skipped`
with why; a reference to it raises `SkippedFault`.
`history` is the run's client operations (lab.judge.metrics.read_operations: index, time,
process, type, f, value, node), when the judge was given them; `timings` the run's
configured timeouts that bounds add (lab.judge.bounds), when the judge was given them.
What the nodes did once the run's teardown began (`workload.phase` teardown: the lab
stopping them one by one, when a backup may take over from the primary stopped first) is
not an observation of the run, as it is not for two masters (lab.judge.metrics).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lab.ground.nodes import BROKER_REF_TRAITS, TargetTraits
from lab.judge.bounds import Timings
from lab.judge.checker import CheckResult
from lab.judge.metrics import NS, RunMetrics

__all__ = ["FaultFacts", "LogLine", "Observation", "RunFacts", "SkippedFault", "UnknownReference"]


class UnknownReference(Exception):
    """A node or moment reference names a fault that did not happen (or never healed)."""


class SkippedFault(UnknownReference):
    """A reference names a fault the nemesis skipped: its selector found no node."""


@dataclass(frozen=True)
class FaultFacts:
    id: str
    fault: str
    target: str
    start_s: float
    end_s: float | None = None
    roles: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class LogLine:
    time_s: float
    node: str
    code: str
    text: str


@dataclass(frozen=True)
class Observation:
    """An event a prediction may ask about: a node's HA status change (`node.ha`, with its
    `status`), a cluster manager's decision (`manager.promote`, `manager.no-candidate`, …),
    a node's start, kill or stop."""

    time_s: float
    kind: str
    node: str | None
    detail: Mapping[str, Any]


OBSERVED_KINDS = ("node.", "manager.", "cluster.")


@dataclass(frozen=True)
class RunFacts:
    """What an expectation reads (`unmet(facts)`): what the run showed, gathered once.

    Attributes:
        faults: each fault applied, by id (`FaultFacts`: `fault`, the node it struck as
            `target`, `start_s`, `end_s` when healed, the nodes' `roles` as it began).
        logs: the nodes' coded log lines (`LogLine`: `time_s`, `node`, `code`, `text`).
        final_roles: each node's role when the run ended (None: no answer).
        metrics: the run's figures (`failover_s` per fault, in the order the faults
            began; the gaps between acknowledged sends; the load's start and end …).
        target: what the run knows of its target (`TargetTraits`).
        observed: node, cluster-manager and cluster events (`Observation`: `time_s`,
            `kind`, `node`, `detail`).
        check: the queue checker's result.
        history: the client operations (a pyarrow table), when the judge was given them.
        timings: the run's configured timeouts bounds add, when the judge was given them.
        skipped: the faults the nemesis skipped (their selector found no node), by id,
            with why.
    """

    faults: Mapping[str, FaultFacts]
    logs: tuple[LogLine, ...]
    final_roles: Mapping[str, str | None]
    metrics: RunMetrics
    target: TargetTraits = BROKER_REF_TRAITS
    observed: tuple[Observation, ...] = ()
    check: CheckResult | None = None
    history: pa.Table | None = None
    timings: Timings | None = None
    skipped: Mapping[str, str] = field(default_factory=dict)  # fault id → why not applied

    @staticmethod
    def gather(
        events: Iterable[Mapping[str, Any]],
        metrics: RunMetrics,
        target: TargetTraits = BROKER_REF_TRAITS,
        check: CheckResult | None = None,
        history: pa.Table | None = None,
        timings: Timings | None = None,
    ) -> RunFacts:
        starts: dict[str, FaultFacts] = {}
        ends: dict[str, float] = {}
        logs: list[LogLine] = []
        observed: list[Observation] = []
        final: dict[str, str | None] = {}
        skipped: dict[str, str] = {}
        ending = False  # the teardown began: nodes stopping one by one are not the run's
        for e in sorted(events, key=lambda e: int(e.get("time", 0))):
            kind = e.get("kind")
            time_s = int(e.get("time", 0)) / NS
            if kind == "workload.phase" and e.get("phase") == "teardown":
                ending = True
            if kind == "fault.start" and "id" in e:
                starts[str(e["id"])] = FaultFacts(
                    id=str(e["id"]),
                    fault=str(e.get("fault")),
                    target=str(e.get("target")),
                    start_s=time_s,
                    roles=dict(e.get("roles") or {}),
                )
            elif kind == "fault.skipped" and "id" in e:
                skipped[str(e["id"])] = str(e.get("error", ""))
            elif kind == "fault.end" and "id" in e and "error" not in e:
                ends[str(e["id"])] = time_s
            elif kind == "broker.log" and e.get("node"):
                logs.append(
                    LogLine(time_s, str(e["node"]), str(e.get("code")), str(e.get("text", "")))
                )
            elif kind == "node.status" and e.get("node"):
                final[str(e["node"])] = e.get("role")
            if isinstance(kind, str) and kind.startswith(OBSERVED_KINDS) and not ending:
                node = e.get("node")
                detail = {k: v for k, v in e.items() if k not in ("v", "time", "kind", "node")}
                observed.append(
                    Observation(time_s, kind, None if node is None else str(node), detail)
                )
        faults = {
            i: FaultFacts(f.id, f.fault, f.target, f.start_s, ends.get(i), f.roles)
            for i, f in starts.items()
        }
        return RunFacts(
            faults,
            tuple(logs),
            final,
            metrics,
            target,
            tuple(observed),
            check,
            history,
            timings,
            skipped,
        )

    def fault(self, fault_id: str) -> FaultFacts:
        """The fault `fault_id` as applied (`FaultFacts`); UnknownReference when it never
        was (SkippedFault when the nemesis skipped it)."""
        try:
            return self.faults[fault_id]
        except KeyError:
            if fault_id in self.skipped:
                raise SkippedFault(f"fault {fault_id} was skipped") from None
            raise UnknownReference(f"fault {fault_id} was never applied") from None

    def node(self, ref: str) -> str:
        """The node name a reference stands for: `n2`, `f1` (the node f1 struck) or
        `master@f1` (the node MASTER when f1 began)."""
        if ref.startswith("master@"):
            found = self.fault(ref.removeprefix("master@"))
            masters = [n for n, r in found.roles.items() if r == "MASTER"]
            if len(masters) != 1:
                raise UnknownReference(f"{ref}: {len(masters)} masters when {found.id} began")
            return masters[0]
        if ref in self.faults or (ref.startswith("f") and ref[1:].isdigit()):
            return self.fault(ref).target
        return ref

    def after_restart(self, ref: str) -> bool:
        """Whether `ref` is the end of a kill or a graceful stop (the node started again), or
        the start of a cluster's restart (every node started again)."""
        fault_id, _, edge = ref.partition(":")
        fault = self.fault(fault_id).fault
        if edge == "start":
            return fault == "restart_cluster"
        return edge == "end" and fault in ("kill", "graceful_stop")

    def moment(self, ref: str) -> float:
        """Seconds since the run began for `f1:start` / `f1:end`."""
        fault_id, _, edge = ref.partition(":")
        found = self.fault(fault_id)
        if edge == "start":
            return found.start_s
        if edge == "end":
            if found.end_s is None:
                raise UnknownReference(f"fault {fault_id} was never healed")
            return found.end_s
        raise UnknownReference(f"bad moment {ref!r}: write f1:start or f1:end")
