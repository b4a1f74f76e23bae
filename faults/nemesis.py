"""Applies a schedule to a cluster; every heal is registered before its fault is applied.

with Nemesis(cluster, events=..., log=...) as nemesis:
    nemesis.run(schedule, started_at=..., keep_going=...)
# leaving the block heals whatever is still applied, also on Ctrl-C or an exception

A heal the target refuses in a state the run led it to (`HealRefused`) is recorded, as
`ok: false` and a `fault.end` event with its `error` and `refused: true`, and the run goes
on; any other failed heal is raised.

A start whose selector finds no node at its moment (`@master` with no master or two, after
waiting for an election: faults.selectors.Unresolved) is not applied: it is recorded as
`ok: false` with the roles seen, a `fault.skipped` event says so, its stop finds nothing to
heal, and the run goes on (the judge then cannot check the prediction: lab.judge.prediction).

Starts that fall at one moment strike together: each on its own thread, once every
selector is resolved (a slow `docker kill` must not leave the other victims standing).

A start with a trigger (`when`: a new master, a replica catching up, a node rejoining) is
armed at its time and strikes when the cluster shows it (read every TRIGGER_POLL_S), or at
its deadline; `fault.armed` and `fault.trigger` events say when, and whether it fired or
timed out. Its stop heals it `after_s` after it struck.

Around a kill the nemesis reads each node's last transaction id (a `Reporting` cluster),
unless other operations fall at the same moment (they must strike together):
just before the kill and again once the node is dead, each answer a `node.txid` event
(`fault`, `moment` before/after, `txid`), so the judge can compare the election that
follows with what each node held when the master went (docs/scenarios.md J1).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

from faults.abilities import Reporting, Roled
from faults.catalog import FAULTS
from faults.fault import Fault, HealRefused
from faults.heals import HealStack
from faults.selectors import Unresolved, resolve_op
from faults.triggers import Armed, Watch
from lab.ground.errors import LabError
from lab.ground.events import Events, NoEvents
from lab.ground.faultops import FaultOp

__all__ = ["HealStack", "Nemesis"]

READS_TRANSACTIONS = frozenset({"kill"})  # faults around which node.txid events are recorded
TRIGGER_POLL_S = 0.1  # how often the cluster is read while a fault waits for its trigger


@dataclass(frozen=True)
class _Struck:
    """A start operation prepared to strike: its heal pushed, its selector resolved."""

    planned: FaultOp
    fault: Fault
    resolved: FaultOp
    reads: bool


class Nemesis:
    """Runs fault operations at their planned times and heals everything at the end."""

    def __init__(
        self,
        cluster: object,
        *,
        faults: Mapping[str, Fault] = FAULTS,
        events: Events | None = None,
        log: Callable[[dict[str, Any]], None] | None = None,
        clock_ns: Callable[[], int] = time.monotonic_ns,
        on_change: Callable[[str, FaultOp], None] | None = None,
        selector_wait_s: float = 5.0,
    ) -> None:
        self.cluster = cluster
        self.selector_wait_s = selector_wait_s  # how long a selector waits for its node
        self.faults = faults
        self.events: Events = events or NoEvents()
        self._log = log or (lambda entry: None)
        self._clock_ns = clock_ns
        self._on_change = on_change or (lambda what, op: None)
        self.heals = HealStack()
        self.applied = 0
        self.healed = 0
        self._counting = threading.Lock()
        self.healed_at_end: list[str] = []  # faults healed by `heal_all` (ids), not by schedule
        # False while applying operations that fall at one moment (a total failure's kills):
        # reading every node between them would spread faults meant to strike together.
        self.reads_between = True

    def __enter__(self) -> Nemesis:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.heal_all()

    def _record(
        self, op: FaultOp, ok: bool, error: str | None = None, planned: FaultOp | None = None
    ) -> None:
        entry: dict[str, Any] = {"phase": "applied", **op.to_json(), "time": self._clock_ns()}
        if planned is not None and planned.target != op.target:
            entry["planned_target"] = planned.target
        if planned is not None and dict(planned.params) != dict(op.params):
            entry["planned_params"] = dict(planned.params)
        entry["ok"] = ok
        if error is not None:
            entry["error"] = error
        self._log(entry)

    def _roles(self) -> dict[str, str | None] | None:
        """The nodes' roles as the fault is applied (evidence for the judge), if readable."""
        if not isinstance(self.cluster, Roled):
            return None
        try:
            return dict(self.cluster.roles())
        except LabError:
            return None

    def _transactions(self, fault_id: str, moment: str) -> None:
        """A `node.txid` event for each node that reports its last transaction id now
        (a negative id: Broker-J's node whose environment is not open, no answer)."""
        if not isinstance(self.cluster, Reporting):
            return
        try:
            statuses = dict(self.cluster.statuses())
        except LabError:
            return
        for name, status in statuses.items():
            txid = None if status is None else status.last_transaction_id
            if isinstance(txid, int) and txid >= 0:
                self.events.emit("node.txid", name, fault=fault_id, moment=moment, txid=txid)

    def start(self, op: FaultOp) -> None:
        struck = self._prepare(op)
        if struck is not None:
            self._strike(struck)

    def _prepare(self, op: FaultOp, roles: dict[str, str | None] | None = None) -> _Struck | None:
        """Resolve the op's selector, push its heal, read the transactions before it (when it
        reads them) and say it starts (nothing applied yet); `roles`: the nodes' roles read
        once for a moment's starts. None: its selector found no node, and the step is skipped
        (recorded, and said in a `fault.skipped` event)."""
        fault = self.faults[op.fault]
        roles = self._roles() if roles is None else roles
        try:
            resolved = resolve_op(self.cluster, op, wait_s=self.selector_wait_s)
        except Unresolved as exc:
            self._record(op, False, str(exc))
            self.events.emit(
                "fault.skipped", None, id=op.id, fault=op.fault, target=op.target, error=str(exc)
            )
            self._on_change("skipped", op)
            return None
        except LabError as exc:
            self._record(op, False, str(exc))
            raise
        # The heal goes on the stack first: if apply half-works or raises, it still runs.
        self.heals.push(resolved, lambda: fault.heal(self.cluster, resolved))
        reads = op.fault in READS_TRANSACTIONS and self.reads_between
        if reads:  # before `fault.start`, the moment the judge counts from: a slow read (a
            # node's management API waiting on a dead peer) must not come between the two
            self._transactions(op.id, "before")
        extra: dict[str, Any] = {} if roles is None else {"roles": roles}
        if resolved.target != op.target:
            extra["selector"] = op.target
        self.events.emit(
            "fault.start",
            None,
            id=op.id,
            fault=op.fault,
            target=resolved.target,
            params=dict(resolved.params),
            **extra,
        )
        return _Struck(op, fault, resolved, reads)

    def _strike(self, struck: _Struck) -> None:
        op, fault, resolved = struck.planned, struck.fault, struck.resolved
        try:
            fault.apply(self.cluster, resolved)
        except LabError as exc:
            self._record(resolved, False, str(exc), planned=op)
            raise
        if struck.reads:
            self._transactions(op.id, "after")
        with self._counting:
            self.applied += 1
        self._record(resolved, True, planned=op)
        self._on_change("applied", resolved)

    def strike_together(self, ops: list[FaultOp]) -> None:
        """Start faults that fall at one moment at once (a total failure's kills): every
        selector is resolved and every heal pushed first, then each fault is applied on its
        own thread, so one slow apply (`docker kill` waits for the container) does not leave
        the others standing meanwhile. The first error is raised once all have returned."""
        roles = self._roles()
        prepared = [s for s in (self._prepare(op, roles) for op in ops) if s is not None]
        errors: list[BaseException] = []

        def strike(struck: _Struck) -> None:
            try:
                self._strike(struck)
            except BaseException as exc:  # re-raised below, on the nemesis's own thread
                errors.append(exc)

        threads = [
            threading.Thread(target=strike, args=(s,), name=f"strike-{s.planned.id}")
            for s in prepared
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]

    def stop(self, op: FaultOp) -> None:
        heal = self.heals.pop(op.id)
        if heal is None:
            self._record(op, False, "not applied")
            return
        resolved = replace(op, target=heal.op.target, params=heal.op.params)
        self._run_heal(heal.op, heal.run, stop_op=resolved, planned=op)

    def _run_heal(
        self,
        start_op: FaultOp,
        run: Callable[[], None],
        stop_op: FaultOp,
        planned: FaultOp | None = None,
    ) -> bool:
        """Run a heal and record it; False when the target refused it (`HealRefused`)."""
        try:
            run()
        except HealRefused as exc:  # recorded; the run goes on (faults.fault)
            self._record(stop_op, False, str(exc), planned=planned)
            self.events.emit(
                "fault.end",
                None,
                id=start_op.id,
                fault=start_op.fault,
                error=str(exc),
                refused=True,
            )
            self._on_change("refused", start_op)
            return False
        except Exception as exc:
            self._record(stop_op, False, str(exc), planned=planned)
            self.events.emit(
                "fault.end", None, id=start_op.id, fault=start_op.fault, error=str(exc)
            )
            raise
        self.healed += 1
        self._record(stop_op, True, planned=planned)
        self.events.emit(
            "fault.end", None, id=start_op.id, fault=start_op.fault, target=start_op.target
        )
        self._on_change("healed", start_op)
        return True

    def apply(self, op: FaultOp) -> None:
        if op.action == "start":
            self.start(op)
        else:
            self.stop(op)

    def run(
        self,
        schedule: tuple[FaultOp, ...],
        *,
        started_at_ns: int,
        keep_going: Callable[[], bool] = lambda: True,
        tick: Callable[[], None] = lambda: None,
    ) -> None:
        """Apply each operation when its time comes (seconds after `started_at_ns`); starts
        that fall at one moment strike together. A start with a trigger (`when`) is armed
        at its time and strikes when the cluster does what it waits for, or at its deadline;
        its stop comes `after_s` after it struck (faults.triggers)."""
        order = itertools.count()  # ties in time keep the schedule's order
        timed = [
            (op.at_s, next(order), op)
            for op in sorted(schedule, key=lambda o: o.at_s)
            if op.after_s is None
        ]
        relative = {op.id: op for op in schedule if op.after_s is not None}
        watch = Watch(self.cluster)
        armed: list[Armed] = []
        while timed or armed:
            if armed:
                self._fire(armed, watch, started_at_ns, timed, relative, order)
            timed.sort()
            if timed and self._clock_ns() >= started_at_ns + int(timed[0][0] * 1e9):
                at_s = timed[0][0]
                ops = [op for t, _, op in timed if t == at_s]
                timed = [entry for entry in timed if entry[0] != at_s]
                self._moment(at_s, ops, watch, armed)
                continue
            if not keep_going():
                return
            tick()
            wait_s = TRIGGER_POLL_S if armed else 0.05
            if timed:
                left = (started_at_ns + int(timed[0][0] * 1e9) - self._clock_ns()) / 1e9
                wait_s = min(wait_s, max(0.0, left))
            time.sleep(wait_s)

    def _moment(self, at_s: float, ops: list[FaultOp], watch: Watch, armed: list[Armed]) -> None:
        """The operations planned for one moment, in schedule order: starts next to each
        other strike together; a start that waits is armed instead."""
        self.reads_between = len(ops) == 1
        starts: list[FaultOp] = []
        for step in [*ops, None]:
            if step is not None and step.action == "start" and step.when is not None:
                armed.append(watch.arm(step, at_s))
                self.events.emit("fault.armed", None, id=step.id, when=step.when)
                continue
            if step is not None and step.action == "start":
                starts.append(step)
                continue
            if len(starts) > 1:
                self.strike_together(starts)
            elif starts:
                self.start(starts[0])
            starts = []
            if step is not None:
                self.stop(step)

    def _fire(
        self,
        armed: list[Armed],
        watch: Watch,
        started_at_ns: int,
        timed: list[tuple[float, int, FaultOp]],
        relative: Mapping[str, FaultOp],
        order: Iterator[int],
    ) -> None:
        """Strike every armed start whose trigger fired (or whose deadline came), and plan
        its stop `after_s` later."""
        now_s = (self._clock_ns() - started_at_ns) / 1e9
        seen = watch.look()
        for waiting in list(armed):
            fired = waiting.fired(seen)
            if not fired and now_s < waiting.deadline_s:
                continue
            armed.remove(waiting)
            op = waiting.op
            self.events.emit(
                "fault.trigger",
                None,
                id=op.id,
                when=op.when,
                fired=fired,
                waited_s=round(now_s - waiting.armed_s, 3),
            )
            self.reads_between = True
            self.start(op)
            stop = relative.get(op.id)
            if stop is not None:  # `after_s` from when it was applied
                struck_s = (self._clock_ns() - started_at_ns) / 1e9
                heal_at = round(struck_s + (stop.after_s or 0.0), 3)
                timed.append((heal_at, next(order), replace(stop, at_s=heal_at)))

    def heal_all(self) -> None:
        """Heal every fault still applied, newest first; tries every heal even if one fails."""
        errors: list[str] = []
        while (heal := self.heals.pop_newest()) is not None:
            stop = FaultOp(
                at_s=heal.op.at_s,
                action="stop",
                fault=heal.op.fault,
                target=heal.op.target,
                id=heal.op.id,
                params=heal.op.params,
            )
            try:
                if self._run_heal(heal.op, heal.run, stop_op=stop):
                    self.healed_at_end.append(heal.op.id)
            except Exception as exc:  # every other heal must still run
                errors.append(f"{heal.op.id} ({heal.op.fault} {heal.op.target}): {exc}")
        if errors:
            raise LabError("some heals failed: " + "; ".join(errors))
