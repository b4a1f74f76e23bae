"""A hand-written incident: a spec file in TOML or JSON, run with `lab run --spec FILE`.

    scenario = "incident"       # whose prediction judges the run (default: `incident`)
    seed = 7                    # default 0
    target = "broker_ref"       # backend = "process", mode = "replicated-group"
                                # a version: target = "qpid-broker-j@9.1.0"
    [topology]    nodes = 3   spares = ["n3"]   (started only by an add_node fault)
    [durability]  triplet = "NO_SYNC,NO_SYNC,SIMPLE_MAJORITY"   coalescing_sync = true
    [workload]    producers = 2  consumers = 1  rate = 100.0  duration_s = 20.0
    [group]       (GroupSettings' fields; group.active_passive for that mode)
    [[fault]]     id = "f1"  fault = "kill"  target = "@master"  start_s = 5.0  end_s = 8.0
                  params = { … }    (no end_s: never healed, as transfer_master)
    [[fault]]     id = "f2"  fault = "kill"  target = "@master"  start_s = 9.0
                  when = "new-master"  within_s = 10.0  length_s = 2.0
                  (armed at start_s: strikes when a new master appears, 10 s later at the
                  latest, and is healed 2 s after it struck; see faultops.TRIGGERS)

Faults may instead be given as `[[schedule]]` operations, as spec.json holds them
(`at_s`, `action` start|stop, …), so a spec.json a user edited is an incident too. Every
section and field is checked by name before anything starts; the first problem is a
one-line InputError naming the file and the field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from faults.schedule_check import check_schedule
from lab.ground.cluster_settings import ActivePassiveSettings
from lab.ground.errors import InputError, UsageError
from lab.ground.faultops import TRIGGERS, FaultOp, canonical
from lab.ground.files import read_user_document
from lab.ground.spec import (
    SPEC_VERSION,
    Durability,
    GroupSettings,
    RunSpec,
    Topology,
    Workload,
    timeouts_from_json,
)
from lab.ground.spec_words import parse_seed, split_target
from lab.run.spec_values import check_names, check_section, check_target_context

__all__ = ["INCIDENT", "load_edited_spec", "load_incident", "validate_spec"]

INCIDENT = "incident"  # the scenario of a hand-written incident: no acknowledged loss
_TOP = frozenset(
    {
        "v",
        "scenario",
        "seed",
        "target",
        "target_version",
        "target_timeouts",
        "backend",
        "mode",
        "topology",
        "durability",
        "workload",
        "group",
        "fault",
        "schedule",
        "lab_version",
        "git_revision",
    }
)
_WINDOW = frozenset(
    {"id", "fault", "target", "start_s", "end_s", "params", "when", "within_s", "length_s"}
)
_OP = frozenset(
    {"id", "at_s", "action", "fault", "target", "params", "when", "within_s", "after_s"}
)
_OPTIONAL = frozenset({"params", "when", "within_s", "after_s"})


def _names(cls: Any) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def _table(raw: Mapping[str, Any], key: str, known: frozenset[str]) -> dict[str, Any]:
    section = raw.get(key, {})
    if not isinstance(section, Mapping):
        raise UsageError(f"{key}: must be a table of settings")
    unknown = sorted(set(section) - known)
    if unknown:
        raise UsageError(f"{key}.{unknown[0]}: unknown setting (known: {', '.join(sorted(known))})")
    return dict(section)


def _durability(raw: Mapping[str, Any]) -> Durability:
    fields = _table(raw, "durability", _names(Durability) | {"triplet"})
    triplet = fields.pop("triplet", None)
    if triplet is not None:
        if set(fields) - {"coalescing_sync"}:
            raise UsageError("durability: give the triplet or the three policies, not both")
        return Durability.parse(str(triplet), _flag(fields.get("coalescing_sync", True)))
    for name in ("master_sync", "replica_sync", "ack_policy"):
        if name in fields and not isinstance(fields[name], str):
            raise UsageError(f"durability.{name}: must be a policy name, not {fields[name]!r}")
    if "coalescing_sync" in fields:
        _flag(fields["coalescing_sync"])
    try:
        return Durability(**fields)
    except (UsageError, ValueError) as exc:
        raise UsageError(f"durability: {exc}") from None


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"durability.coalescing_sync: must be true or false, not {value!r}")
    return value


def _group(raw: Mapping[str, Any]) -> GroupSettings:
    fields = _table(raw, "group", _names(GroupSettings))
    if "mode" in raw:
        if "mode" in fields and fields["mode"] != raw["mode"]:
            raise UsageError("mode: differs from group.mode")
        fields["mode"] = raw["mode"]
    settings = fields.get("active_passive") or {}
    if not isinstance(settings, Mapping):
        raise UsageError("group.active_passive: must be a table of settings")
    unknown = sorted(set(settings) - _names(ActivePassiveSettings))
    if unknown:
        raise UsageError(f"group.active_passive.{unknown[0]}: unknown setting")
    check_section("group", fields)
    check_section("group.active_passive", settings)
    check_target_context(fields.get("target_context"))
    return GroupSettings.from_json(fields)


def _windows(entries: Any) -> list[FaultOp]:
    if not isinstance(entries, list):
        raise UsageError("fault: must be a list of [[fault]] tables")
    ops: list[FaultOp] = []
    for number, entry in enumerate(entries, start=1):
        where = f"fault[{number}]"
        if not isinstance(entry, Mapping):
            raise UsageError(f"{where}: must be a table")
        unknown = sorted(set(entry) - _WINDOW)
        if unknown:
            raise UsageError(
                f"{where}.{unknown[0]}: unknown field (known: {', '.join(sorted(_WINDOW))})"
            )
        for needed in ("fault", "target", "start_s"):
            if needed not in entry:
                raise UsageError(f"{where}.{needed}: missing")
        fault_id = str(entry.get("id", f"f{number}"))
        params = entry.get("params", {})
        if not isinstance(params, Mapping):
            raise UsageError(f"{where}.params: must be a table")
        fault, target = str(entry["fault"]), str(entry["target"])
        start = _seconds(entry["start_s"], f"{where}.start_s")
        if "when" in entry:
            ops.extend(_triggered(entry, where, fault, target, fault_id, start, dict(params)))
            continue
        for only in ("within_s", "length_s"):
            if only in entry:
                raise UsageError(f"{where}.{only}: only for a fault that waits (`when`)")
        ops.append(FaultOp(start, "start", fault, target, fault_id, dict(params)))
        if "end_s" in entry:
            end = _seconds(entry["end_s"], f"{where}.end_s")
            if end < start:
                raise UsageError(
                    f"{where}.end_s: the heal ({end:g} s) is before the fault ({start:g} s)"
                )
            ops.append(FaultOp(end, "stop", fault, target, fault_id, dict(params)))
    return ops


def _triggered(
    entry: Mapping[str, Any],
    where: str,
    fault: str,
    target: str,
    fault_id: str,
    start: float,
    params: dict[str, Any],
) -> list[FaultOp]:
    """A [[fault]] that waits: `when`, `within_s` (how long at most), and `length_s` (how long
    after it struck it is healed; none: never healed), instead of `end_s`."""
    when = entry["when"]
    if when not in TRIGGERS:
        raise UsageError(f"{where}.when: {when!r} is not one of {', '.join(TRIGGERS)}")
    if "end_s" in entry:
        raise UsageError(f"{where}.end_s: a fault that waits (`when`) is healed after length_s")
    if "within_s" not in entry:
        raise UsageError(f"{where}.within_s: missing (how long the fault waits at most)")
    within = _seconds(entry["within_s"], f"{where}.within_s")
    if within <= 0:
        raise UsageError(f"{where}.within_s: must be more than 0")
    ops = [FaultOp(start, "start", fault, target, fault_id, params, when=when, within_s=within)]
    if "length_s" in entry:
        length = _seconds(entry["length_s"], f"{where}.length_s")
        ops.append(
            FaultOp(
                start + within + length, "stop", fault, target, fault_id, params, after_s=length
            )
        )
    return ops


def _operations(entries: Any) -> list[FaultOp]:
    if not isinstance(entries, list):
        raise UsageError("schedule: must be a list of operations")
    ops: list[FaultOp] = []
    for number, entry in enumerate(entries, start=1):
        where = f"schedule[{number}]"
        if not isinstance(entry, Mapping):
            raise UsageError(f"{where}: must be a table")
        unknown = sorted(set(entry) - _OP)
        if unknown:
            raise UsageError(f"{where}.{unknown[0]}: unknown field")
        missing = sorted(_OP - _OPTIONAL - set(entry))
        if missing:
            raise UsageError(f"{where}.{missing[0]}: missing")
        for name in ("id", "action", "fault", "target"):
            if not isinstance(entry[name], str):
                raise UsageError(f"{where}.{name}: must be a string, not {entry[name]!r}")
        try:
            ops.append(
                FaultOp.from_json({**entry, "at_s": _seconds(entry["at_s"], f"{where}.at_s")})
            )
        except ValueError as exc:
            raise UsageError(f"{where}: {exc}") from None
    return ops


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{where}: must be a number of seconds, not {value!r}")
    return float(value)


def _target(raw: Mapping[str, Any], defaults: Mapping[str, str]) -> tuple[str, str | None]:
    """`target = "NAME@VERSION"`, or `target` and `target_version` (as spec.json has them)."""
    name, version = split_target(str(raw.get("target", defaults.get("target", "broker_ref"))))
    given = raw.get("target_version")
    if given is None:
        return name, version
    if not isinstance(given, str):
        raise UsageError(f'target_version: must be a version such as "9.1.0", not {given!r}')
    if version is not None and version != given:
        raise UsageError(f"target_version: {given} differs from the target's @{version}")
    return split_target(f"{name}@{given}")


def _spec(raw: Mapping[str, Any], defaults: Mapping[str, str] | None = None) -> RunSpec:
    defaults = defaults or {}
    unknown = sorted(set(raw) - _TOP)
    if unknown:
        raise UsageError(f"{unknown[0]}: unknown setting (known: {', '.join(sorted(_TOP))})")
    if "fault" in raw and "schedule" in raw:
        raise UsageError(
            "give the faults as [[fault]] windows or as [[schedule]] operations, not both"
        )
    ops = _windows(raw["fault"]) if "fault" in raw else _operations(raw.get("schedule", []))
    for name in ("scenario", "target", "backend"):
        if name in raw and not isinstance(raw[name], str):
            raise UsageError(f"{name}: must be a name, not {raw[name]!r}")
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int | str):
        raise UsageError(f"seed: must be a whole number, not {seed!r}")
    topology = _table(raw, "topology", _names(Topology))
    check_section("topology", topology)
    workload = _table(raw, "workload", _names(Workload))
    check_section("workload", workload)
    if isinstance(workload.get("side"), Mapping):
        check_section("workload.side", workload["side"])
    target, version = _target(raw, defaults)
    spec = RunSpec(
        scenario=str(raw.get("scenario", INCIDENT)),
        seed=parse_seed(str(seed)),
        target=target,
        backend=str(raw.get("backend", defaults.get("backend", "process"))),
        topology=Topology(**topology),
        durability=_durability(raw),
        workload=Workload.from_json(workload),
        group=_group(raw),
        target_version=version,
        # as spec.json wrote them: they made its schedule, an incident's is given
        target_timeouts=timeouts_from_json(raw.get("target_timeouts", {})),
    )
    check_names(_table(raw, "group", _names(GroupSettings)), spec.topology.node_names)
    return dataclasses.replace(spec, schedule=canonical(tuple(ops)))


def validate_spec(spec: RunSpec) -> None:
    """The schedule against the spec's cluster and load (faults.schedule_check)."""
    if spec.topology.spares and spec.group.is_active_passive:
        raise UsageError(
            "topology.spares: spare nodes join a replicated group; an active-passive "
            "cluster's brokers all start together"
        )
    check_schedule(
        spec.schedule,
        spec.topology.node_names,
        spec.workload.duration_s,
        managed=spec.group.is_active_passive,
        manager=not spec.group.active_passive.self_activated,
        spares=spec.topology.spares,
    )


def load_incident(path: Path, defaults: Mapping[str, str] | None = None) -> RunSpec:
    """The run spec an incident file describes, checked; InputError names file and field.
    `defaults`: the `target` and `backend` of a file that names none (the pytest plugin's
    session choices; otherwise broker_ref on local processes)."""
    raw = read_user_document(path, "incident file")
    try:
        spec = _spec(raw, defaults)
        validate_spec(spec)
    except (UsageError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: {_one_line(exc)}") from None
    return spec


_SPEC_JSON_NEEDS = ("scenario", "seed", "topology", "durability", "workload", "schedule")


def load_edited_spec(raw: object, path: Path) -> RunSpec:
    """A run folder's spec.json (perhaps edited by hand), checked field by field as an
    incident is; InputError names the file and the field."""
    if not isinstance(raw, Mapping):
        raise InputError(f"{path}: a run spec is a JSON object")
    try:
        version = raw.get("v", SPEC_VERSION)
        if version != SPEC_VERSION:
            raise UsageError(f"v: spec version {version!r} is not one this lab reads")
        for needed in _SPEC_JSON_NEEDS:
            if needed not in raw:
                raise UsageError(f"{needed}: missing")
        spec = _spec(raw)
        validate_spec(spec)
    except (UsageError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: {_one_line(exc)}") from None
    made_by = raw.get("lab_version")
    revision = raw.get("git_revision")
    return dataclasses.replace(
        spec,
        lab_version=made_by if isinstance(made_by, str) else spec.lab_version,
        git_revision=revision if isinstance(revision, str) else None,
    )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
