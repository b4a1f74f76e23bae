"""What a scenario test shows in Allure, built from its run folder (no Allure involved;
allure_attach.py hands it to allure-commons' reporter).

    run_report(folder, …) → RunReport      reads the run folder

A RunReport holds: one step per fault (its real start and stop, from the applied
entries of schedule.jsonl), the labels (parent suite / suite / sub-suite and epic /
feature / story = family / scenario / target), a Markdown description with the
commands that reproduce the test and the run, and the attachments: the timeline
chart, the checker's result, a summary of the history, result.json, spec.json,
schedule.jsonl, events.jsonl and each node's broker.log (and stderr.log, if any).

Times in schedule.jsonl are on the run's clock (ns since the run started, as in
history.jsonl and events.jsonl); the `run.start` event's `wall_ns` (the wall
clock at the run's start) turns them into the epoch milliseconds Allure expects.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.ground.spec import RunSpec
from lab.judge.metrics import read_events, read_operations
from lab.reporting.history_summary import history_summary
from lab.reporting.timeline_chart import render_timeline, timeline_from_run
from lab.run.folder import RunFolder
from lab.run.reproduce import reproduce_command
from scenarios.base import Scenario

__all__ = [
    "CHECKER_RESULT",
    "HISTORY_SUMMARY",
    "TIMELINE",
    "Attachment",
    "Description",
    "FaultStep",
    "RunReport",
    "fault_steps",
    "jsonl_objects",
    "run_report",
    "run_wall_start_ns",
    "scenario_family",
]

TIMELINE = "timeline"
CHECKER_RESULT = "checker result"
HISTORY_SUMMARY = "history summary"
MAX_ATTACHMENT_BYTES = 8 * 1024 * 1024
NS = 1_000_000_000


@dataclass(frozen=True)
class Attachment:
    name: str
    body: bytes
    mime: str
    extension: str


@dataclass(frozen=True)
class FaultStep:
    """One fault, from its applied start to its applied stop (epoch ms; None if never)."""

    id: str
    title: str
    start_ms: int | None
    stop_ms: int | None
    status: str  # passed: applied and healed; broken: either failed; skipped: never applied
    error: str | None = None
    parameters: tuple[tuple[str, str], ...] = ()
    attachments: tuple[Attachment, ...] = ()


@dataclass(frozen=True)
class Description:
    """The test's description: what the scenario is, its verdict, the commands that
    reproduce it; as Markdown and as the HTML Allure 2 shows."""

    scenario: str
    summary: str
    prediction: str
    verdict: str
    reasons: tuple[str, ...]
    commands: tuple[tuple[str, str], ...]  # (what it does, the command)
    run_folder: str

    def markdown(self) -> str:
        parts = [f"**{self.scenario}**: {self.summary}"]
        if self.prediction:
            parts.append(f"The documents predict: {self.prediction}")
        parts.append(f"Verdict: **{self.verdict}**")
        if self.reasons:
            parts.append("\n".join(f"- {reason}" for reason in self.reasons))
        parts.extend(f"{what}:\n\n```\n{command}\n```" for what, command in self.commands)
        parts.append(f"Run folder: `{self.run_folder}`")
        return "\n\n".join(parts) + "\n"

    def html(self) -> str:
        e = html.escape
        parts = [f"<p><b>{e(self.scenario)}</b>: {e(self.summary)}</p>"]
        if self.prediction:
            parts.append(f"<p>The documents predict: {e(self.prediction)}</p>")
        parts.append(f"<p>Verdict: <b>{e(self.verdict)}</b></p>")
        if self.reasons:
            items = "".join(f"<li>{e(reason)}</li>" for reason in self.reasons)
            parts.append(f"<ul>{items}</ul>")
        parts.extend(
            f"<p>{e(what)}:</p><pre><code>{e(command)}</code></pre>"
            for what, command in self.commands
        )
        parts.append(f"<p>Run folder: <code>{e(self.run_folder)}</code></p>")
        return "\n".join(parts)


@dataclass(frozen=True)
class RunReport:
    labels: tuple[tuple[str, str], ...]
    description: Description
    steps: tuple[FaultStep, ...]
    attachments: tuple[Attachment, ...]
    spec: RunSpec

    def attachment(self, name: str) -> Attachment:
        return next(a for a in self.attachments if a.name == name)


def run_wall_start_ns(events: Sequence[Mapping[str, Any]]) -> int:
    """The wall clock (epoch ns) when the run's clock started: run time + this = epoch ns."""
    for event in events:
        if event.get("kind") == "run.start" and isinstance(event.get("wall_ns"), int):
            return int(event["wall_ns"])
    return time.time_ns()


def _scenario(name: str) -> Scenario | None:
    """The scenario of that name: the lab's own or an installed package's (None: unknown,
    or its entry point cannot be loaded)."""
    from lab.ground.errors import LabError
    from scenarios.catalog import scenario_named

    try:
        return scenario_named(name)
    except LabError:
        return None


def scenario_family(name: str) -> str:
    """The family a scenario belongs to: the scenarios module that defines its schedule."""
    scenario = _scenario(name)
    if scenario is None:
        return "other"
    return str(scenario.schedule.__module__).rsplit(".", 1)[-1].replace("_", " ")


def jsonl_objects(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # a torn last line
        if isinstance(obj, dict):
            found.append(obj)
    return found


def _capped(body: bytes, source: Path) -> bytes:
    if len(body) <= MAX_ATTACHMENT_BYTES:
        return body
    left_out = len(body) - MAX_ATTACHMENT_BYTES
    head = f"[the first {left_out} bytes are left out; the whole file: {source}]\n"
    return head.encode() + body[left_out:]


def _file_attachment(name: str, path: Path, mime: str, extension: str) -> Attachment | None:
    if not path.is_file():
        return None
    return Attachment(name, _capped(path.read_bytes(), path), mime, extension)


def _json_attachment(name: str, obj: Any) -> Attachment:
    return Attachment(name, json.dumps(obj, indent=2).encode(), "application/json", "json")


def _to_ms(monotonic_ns: Any, offset_ns: int) -> int | None:
    return None if monotonic_ns is None else (int(monotonic_ns) + offset_ns) // 1_000_000


def _describe_params(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items()))


def fault_steps(
    schedule: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
    offset_ns: int,
) -> tuple[FaultStep, ...]:
    """One step per fault id of schedule.jsonl, in the order the faults were planned."""
    planned: dict[str, dict[str, Mapping[str, Any]]] = {}
    applied: dict[str, dict[str, Mapping[str, Any]]] = {}
    for entry in schedule:
        table = planned if entry.get("phase") == "planned" else applied
        by_action = table.setdefault(str(entry.get("id")), {})
        # the first applied start and the last applied stop (heal_all may add a late stop)
        if entry.get("action") == "stop" or entry.get("action") not in by_action:
            by_action[str(entry.get("action"))] = entry
    steps = []
    ids = list(dict.fromkeys([*planned, *applied]))
    for fault_id in ids:
        plan = planned.get(fault_id, {})
        done = applied.get(fault_id, {})
        start, stop = done.get("start"), done.get("stop")
        first = start or plan.get("start") or stop or plan.get("stop") or {}
        target = str(first.get("target", "?"))
        params = dict(first.get("params") or {})
        title = f"{fault_id} {first.get('fault', '?')} {target}"
        if params:
            title += f" ({_describe_params(params)})"
        errors = [str(e["error"]) for e in (start, stop) if e is not None and not e.get("ok")]
        if start is None:
            status = "skipped"
        elif errors:
            status = "broken"
        else:
            status = "passed"
        parameters: list[tuple[str, str]] = []
        for action in ("start", "stop"):
            if action in plan:
                parameters.append(
                    (f"planned {action} (s into the load)", str(plan[action]["at_s"]))
                )
        if start is not None and start.get("planned_target"):
            parameters.append(("planned target", str(start["planned_target"])))
        start_ms = _to_ms(None if start is None else start.get("time"), offset_ns)
        stop_ms = _to_ms(None if stop is None else stop.get("time"), offset_ns)
        steps.append(
            FaultStep(
                id=fault_id,
                title=title,
                start_ms=start_ms,
                stop_ms=stop_ms if stop_ms is not None else start_ms,
                status=status,
                error="; ".join(errors) or None,
                parameters=tuple(parameters),
                attachments=_events_of_fault(fault_id, events),
            )
        )
    return tuple(steps)


def _events_of_fault(fault_id: str, events: Sequence[Mapping[str, Any]]) -> tuple[Attachment, ...]:
    """The events from the fault's start to its end (run clock), as JSON lines."""
    start = next(
        (
            int(e["time"])
            for e in events
            if e.get("kind") == "fault.start" and e.get("id") == fault_id
        ),
        None,
    )
    if start is None:
        return ()
    end = next(
        (
            int(e["time"])
            for e in events
            if e.get("kind") == "fault.end" and e.get("id") == fault_id
        ),
        max(int(e.get("time", 0)) for e in events),
    )
    inside = [e for e in events if start <= int(e.get("time", -1)) <= end]
    body = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in inside)
    return (Attachment(f"events during {fault_id}", body.encode(), "text/plain", "jsonl"),)


def _description(
    spec: RunSpec, folder: RunFolder, result: Mapping[str, Any], test_command: str | None
) -> Description:
    scenario = _scenario(spec.scenario)
    reasons = [str(r) for r in result.get("reasons") or []]
    if result.get("error"):
        reasons.append(str(result["error"]))
    commands = [] if test_command is None else [("Reproduce this test", test_command)]
    commands.append(
        ("Reproduce this run", str(result.get("reproduce") or reproduce_command(spec, folder.path)))
    )
    return Description(
        scenario=spec.scenario,
        summary=scenario.summary if scenario else "",
        prediction=str(result.get("prediction") or ""),
        verdict=str(result.get("verdict", "unknown")),
        reasons=tuple(reasons),
        commands=tuple(commands),
        run_folder=str(folder.path),
    )


def _labels(spec: RunSpec, family: str) -> tuple[tuple[str, str], ...]:
    return (
        ("parentSuite", family),
        ("suite", spec.scenario),
        ("subSuite", spec.target),
        ("epic", family),
        ("feature", spec.scenario),
        ("story", spec.target),
        ("tag", spec.backend),
    )


def run_report(
    path: Path,
    *,
    family: str,
    offset_ns: int,
    test_command: str | None = None,
) -> RunReport:
    """Everything the test shows, from the run folder at `path` (complete or not)."""
    folder = RunFolder.open_existing(path)
    spec = RunSpec.from_json(folder.read_spec(), folder.spec)
    result = _json_object(folder.result)
    check = result.get("check")
    if not isinstance(check, dict):
        from lab.judge.checker import check_path

        check = check_path(folder.history).to_json() if folder.history.is_file() else {}
    events = read_events(folder.events)
    schedule = jsonl_objects(folder.schedule)
    timeline = timeline_from_run(read_operations(folder.history), events)
    chart = render_timeline(timeline, f"{spec.scenario}  seed {spec.seed}  ({spec.target})")
    attachments = [
        Attachment(TIMELINE, chart, "image/png", "png"),
        _json_attachment(CHECKER_RESULT, check),
        Attachment(
            HISTORY_SUMMARY, history_summary(folder, result, check).encode(), "text/plain", "txt"
        ),
    ]
    for name, file, mime, ext in (
        ("result.json", folder.result, "application/json", "json"),
        ("spec.json", folder.spec, "application/json", "json"),
        ("schedule.jsonl", folder.schedule, "text/plain", "jsonl"),
        ("events.jsonl", folder.events, "text/plain", "jsonl"),
    ):
        found = _file_attachment(name, file, mime, ext)
        if found is not None:
            attachments.append(found)
    nodes_dir = folder.path / "nodes"
    for node_dir in sorted(nodes_dir.iterdir()) if nodes_dir.is_dir() else []:
        for log in ("broker.log", "stderr.log"):
            file = node_dir / log
            if file.is_file() and (log == "broker.log" or file.stat().st_size > 0):
                found = _file_attachment(f"{node_dir.name} {log}", file, "text/plain", "log")
                if found is not None:
                    attachments.append(found)
    return RunReport(
        labels=_labels(spec, family),
        description=_description(spec, folder, result, test_command),
        steps=fault_steps(schedule, events, offset_ns),
        attachments=tuple(attachments),
        spec=spec,
    )


def _json_object(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return obj if isinstance(obj, dict) else {}
