"""A scenario suite against one target (the pytest plugin's `--lab-target`): what `lab run`
refuses before anything starts, the target fetched once, and `suite.jsonl`, the session's
index of runs and refusals (one JSON object a line), with `machine.json` beside it (the machine
the session ran on), that the verdict table reads (lab.reporting.suite_table).

    refusal_check(spec, parts, work_dir)    UsageError: the one line `lab run` would give
    prepare(target)                         SetupError: the target cannot be had here
                                            (once per process and target)
    seeds_option(raw, first, default)       the seeds of `--lab-seeds` (UsageError): N seeds
                                            from `first` (or `default`) on, or S1,S2,…
    append_index(path, entry)               {"test", "scenario", "target", "backend", "mode",
                                             "seed", "folder" | "refused", "load"}: the
                                             1-min load average as the line is written;
                                             first machine.json: {"machine": Machine,
                                             "load_average": 1-min}
    deviation_lines(reports)                the declared deviations a session's tests met
    write_deviations(terminalreporter)      … at the end of the session, those not seen loud
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from faults.preflight import preflight
from lab.ground.errors import UsageError
from lab.ground.events import NoEvents
from lab.ground.files import write_json
from lab.ground.machine import this_machine
from lab.ground.spec import RunSpec
from lab.ground.spec_words import parse_seed
from lab.judge.deviations import NOT_SEEN_WARNING
from lab.run.cluster import RunParts
from lab.run.incident import validate_spec
from lab.targets.catalog import make_target

__all__ = [
    "DEVIATION_PROPERTY",
    "PUBLISHED_SEEDS",
    "RUN_PROPERTY",
    "SUITE_INDEX",
    "SUITE_MACHINE",
    "append_index",
    "deviation_lines",
    "prepare",
    "read_index",
    "refusal_check",
    "run_property",
    "run_settings",
    "seeds_option",
    "write_deviations",
]

PUBLISHED_SEEDS = 5  # the seeds per scenario of the published tables (docs/observed/)
MAX_SEEDS = 1000
SUITE_INDEX = "suite.jsonl"
SUITE_MACHINE = "machine.json"  # beside the index: the machine the session ran on, its load
DEVIATION_PROPERTY = "lab_deviation"  # a test's user property: its deviation's one line
RUN_PROPERTY = "lab_run"  # a test's user property: its run's outcome (run_property)


def seeds_option(raw: str | None, first: str | None, default: int) -> tuple[int, ...] | None:
    """The seeds `--lab-seeds` names: a count N is N consecutive seeds from `first` (the
    `--lab-seed` option; `default` without it), a comma-separated list those seeds in that
    order (a repeated one once); None without the option. A bad value is a UsageError."""
    if raw is None:
        return None
    text = raw.strip()
    if "," in text:
        seeds = [parse_seed(part.strip()) for part in text.split(",") if part.strip()]
        if not seeds:
            raise UsageError(f"{raw!r} names no seed")
        return tuple(dict.fromkeys(seeds))
    try:
        count = int(text, 10)
    except ValueError:
        raise UsageError(f"{raw!r} is neither a count of seeds nor a list S1,S2,…") from None
    if not 1 <= count <= MAX_SEEDS:
        raise UsageError(f"{raw!r}: give between 1 and {MAX_SEEDS} seeds")
    start = default if first is None else parse_seed(first)
    return tuple(parse_seed(str(start + i)) for i in range(count))


def refusal_check(spec: RunSpec, parts: RunParts, work_dir: Path) -> None:
    """What `lab run` refuses before anything starts (lab.run.runner.run_scenario): a bad
    spec, a group the target cannot form, a fault the cluster cannot apply (UsageError)."""
    validate_spec(spec)
    probe = parts.cluster(spec, work_dir, NoEvents())
    probe.check()
    preflight(probe, spec.schedule)


@functools.cache
def prepare(target: str) -> None:
    """Fetch what the target needs (Broker-J's distribution, on first use)."""
    found = getattr(make_target(target), "prepare", None)
    if found is not None:
        found()


def append_index(path: Path, entry: dict[str, Any]) -> None:
    """One line of the index, appended whole (several pytest workers may write at once);
    the first one also records the machine beside it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    machine = path.with_name(SUITE_MACHINE)
    load = round(os.getloadavg()[0], 2)
    if not machine.exists():
        write_json(machine, {"machine": this_machine().to_json(), "load_average": load})
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps({**entry, "load": load}) + "\n")


def read_index(path: Path) -> list[dict[str, Any]]:
    """The index's entries; a torn line is skipped."""
    found: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            found.append(entry)
    return found


def run_settings(folder: Path, target: str) -> tuple[tuple[str, str], ...]:
    """The target settings a run was given (its spec.json's `group.target_context` for
    `target`, without the target's defaults), sorted; none when unreadable."""
    try:
        spec = json.loads((folder / "spec.json").read_text(encoding="utf-8"))
        given = spec["group"]["target_context"].get(target) or {}
        return tuple(sorted((str(k), str(v)) for k, v in dict(given).items()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return ()


def run_property(folder: Path) -> str:
    """What a session's rates need of a run, from its result.json (JSON): scenario, target
    (`NAME@VERSION` when its version is recorded, so two versions count apart), backend,
    mode, seed, target settings, verdict, the deviation it reproduced and its longest gap."""
    try:
        result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        result = {}
    deviation = result.get("deviation") or {}
    target, version = result.get("target"), result.get("target_version")
    return json.dumps(
        {
            **{k: result.get(k) for k in ("scenario", "backend", "mode", "seed")},
            "target": target if version is None else f"{target}@{version}",
            "verdict": result.get("verdict", "unknown"),
            "deviation": deviation.get("id") if result.get("verdict") == "deviation" else None,
            "gap_s": (result.get("metrics") or {}).get("unavailable_longest_s"),
            "settings": dict(run_settings(folder, str(target))),
        }
    )


def deviation_lines(reports: Iterable[Any]) -> list[tuple[str, bool]]:
    """`<test>: <deviation line>` for every test report with a declared deviation, sorted,
    each with whether it is loud (declared, and not seen)."""
    lines = {
        f"{r.nodeid}: {value}"
        for r in reports
        for key, value in getattr(r, "user_properties", ())
        if key == DEVIATION_PROPERTY
    }
    return [(line, NOT_SEEN_WARNING in line) for line in sorted(lines)]


def write_deviations(terminalreporter: Any) -> None:
    """The session's declared deviations, under a heading (pytest's terminal reporter)."""
    lines = deviation_lines(r for rs in terminalreporter.stats.values() for r in rs)
    if lines:
        terminalreporter.write_sep("-", "lab: declared deviations")
    for line, loud in lines:
        terminalreporter.write_line(line, yellow=loud, bold=loud)
