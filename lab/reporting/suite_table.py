"""Verdict tables from scenario-suite sessions, for any target: the generated pages of
docs/observed/ (`lab tables suite RUNS_DIR… --out PAGE`).

    .venv/bin/pytest scenarios/test_scenarios.py --lab-target qpid-broker-j \\
        --lab-runs-dir runs/brokerj-suite [--backend docker] [--lab-seed 7]
    .venv/bin/lab tables suite runs/brokerj-suite --out docs/observed/suite-qpid-broker-j.md

Each folder is read as the suite left it (lab.targets.suite): `suite.jsonl`, every run and
every refusal with its one-line reason; `machine.json`, the machine the session ran on;
and each run's result.json. A folder without an index is searched for result.json files
(refusals are then unknown). Nothing is run: only files are read.

    collect(folders) → [Cell]      one per run or refusal
    table(cells) → [line]          a row per scenario (the catalog's order), a column per
                                   target and backend; a cell's runs one under the other
    sessions(folders) → [Session]  where, when and on what each session ran
    page(…) → text                 the whole generated page

A cell says held, deviation (the declaration's id), broken or unknown with the figures
that matter (acknowledged loss, the longest gap in service), or refused with the reason.
Summaries over many seeds of one scenario (rates) belong in `table`, from the cells.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.ground.errors import UsageError
from lab.ground.machine import Machine
from lab.judge.expectations import UNCHECKABLE
from lab.targets.suite import SUITE_INDEX, SUITE_MACHINE, read_index
from scenarios.catalog import SCENARIOS

__all__ = ["Cell", "Session", "collect", "describe", "page", "sessions", "table"]

TARGET_NAMES = {"broker_ref": "broker_ref", "qpid-broker-j": "Broker-J", "artemis": "Artemis"}
BACKEND_NAMES = {"process": "local processes", "docker": "containers"}
_STAMP = re.compile(r"^(\d{8}T\d{6}Z)-")


@dataclass(frozen=True)
class Cell:
    """One run or one refusal of a scenario on a target (at a version) and backend."""

    scenario: str
    target: str
    backend: str
    text: str
    seed: int | None = None
    verdict: str | None = None  # None: refused
    version: str | None = None  # the target's version (None: none, or not recorded)


@dataclass(frozen=True)
class Session:
    """One folder of runs: how many, their first and last start (UTC, from the run folders'
    names), the machine it recorded and its load average as the session began (None: not
    recorded)."""

    folder: Path
    runs: int
    refused: int
    first: dt.datetime | None
    last: dt.datetime | None
    machine: Machine | None
    load: float | None = None


def _result(folder: Path) -> dict[str, Any] | None:
    try:
        raw = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


def describe(result: dict[str, Any] | None) -> str:
    """A cell's words for one run's result.json (None: the run wrote none)."""
    if result is None:
        return "**unknown**: no result.json (the run did not finish)"
    verdict = str(result.get("verdict", "unknown"))
    check = result.get("check") or {}
    metrics = result.get("metrics") or {}
    lost = (check.get("lost") or {}).get("count")
    gap = metrics.get("unavailable_longest_s")
    figures = []
    if lost is not None:
        figures.append(f"lost {lost}")
    if gap:
        figures.append(f"longest gap {float(gap):.1f} s")
    shown = f" ({', '.join(figures)})" if figures else ""
    deviation = result.get("deviation") or {}
    if verdict == "held":
        if deviation.get("outcome") == "not seen":
            return f"held{shown} — **declared deviation not seen: fixed upstream?**"
        return f"held{shown}"
    if verdict == "deviation":
        return f"deviation `{deviation.get('id', '?')}` reproduced{shown}"
    if result.get("error"):
        return f"**{verdict}**: the run ended with an error ({result['error']})"
    kinds = ", ".join(str(k) for k in result.get("violations", ()))
    reasons = [str(r) for r in result.get("reasons", ())]
    said = [r for r in reasons if not r.startswith(UNCHECKABLE)]
    if len(said) < len(reasons):
        said.append(f"{len(reasons) - len(said)} expectation(s) its logs cannot show")
    return f"**{verdict}** ({kinds}){shown}: " + "; ".join(said)


def _run_cell(
    scenario: str, target: str, backend: str, result: dict[str, Any] | None, version: Any = None
) -> Cell:
    seed = None if result is None else result.get("seed")
    verdict = "unknown" if result is None else str(result.get("verdict", "unknown"))
    ran = (result or {}).get("target_version") or version
    return Cell(scenario, target, backend, describe(result), seed, verdict, _version(ran))


def _version(raw: Any) -> str | None:
    return None if raw is None else str(raw)


def _target(entry: dict[str, Any]) -> tuple[str, str | None]:
    """An index line's target and version (`target_version`, or `NAME@VERSION`)."""
    name, _, version = str(entry.get("target")).partition("@")
    return name, _version(entry.get("target_version") or version or None)


def collect(folders: Sequence[Path]) -> list[Cell]:
    """Every run and refusal the folders hold (unreadable index lines are skipped)."""
    cells: list[Cell] = []
    for folder in folders:
        index = folder / SUITE_INDEX
        if not index.is_file():
            for path in sorted(folder.rglob("result.json")):
                result = _result(path.parent)
                if result is not None:
                    target, backend = str(result.get("target")), str(result.get("backend"))
                    cells.append(_run_cell(str(result["scenario"]), target, backend, result))
            continue
        for entry in read_index(index):
            scenario, (target, version) = str(entry.get("scenario")), _target(entry)
            backend = str(entry.get("backend"))
            if "refused" in entry:
                said = f"refused: {entry['refused']}"
                cells.append(Cell(scenario, target, backend, said, version=version))
            elif "folder" in entry:
                result = _result(Path(str(entry["folder"])))
                cells.append(_run_cell(scenario, target, backend, result, version))
    return cells


def only(cells: Sequence[Cell], ref: str | None) -> list[Cell]:
    """The cells of one target (`NAME`) or of one version of it (`NAME@VERSION`)."""
    if ref is None:
        return list(cells)
    name, _, version = ref.partition("@")
    return [c for c in cells if c.target == name and (not version or c.version == version)]


def target_title(target: str, version: str | None) -> str:
    """`Broker-J 9.1.0`: a target's name as the tables write it, with its version."""
    return TARGET_NAMES.get(target, target) + (f" {version}" if version else "")


def _column(target: str, version: str | None, backend: str) -> str:
    return f"{target_title(target, version)}, {BACKEND_NAMES.get(backend, backend)}"


def _version_key(version: str | None) -> tuple[tuple[int, int | str], ...]:
    parts = re.split(r"[.-]", version or "")
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts)


def _columns(cells: Sequence[Cell]) -> list[tuple[str, str | None, str]]:
    """Target, then version (oldest first), then backend (process before docker)."""
    rank = {name: i for i, name in enumerate(BACKEND_NAMES)}
    found = {(c.target, c.version, c.backend) for c in cells}
    return sorted(found, key=lambda k: (k[0], _version_key(k[1]), rank.get(k[2], 99), k[2]))


def _scenarios(cells: Sequence[Cell]) -> list[str]:
    order = {name: i for i, name in enumerate(SCENARIOS)}
    return sorted({c.scenario for c in cells}, key=lambda s: (order.get(s, len(order)), s))


def table(cells: Sequence[Cell]) -> list[str]:
    """The Markdown table: a row per scenario (the catalog's order), a column per target,
    version and backend."""
    columns = _columns(cells)
    lines = [
        "| scenario | " + " | ".join(_column(*k) for k in columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for scenario in _scenarios(cells):
        row = []
        for target, version, backend in columns:
            where = (scenario, target, version, backend)
            mine = [c for c in cells if (c.scenario, c.target, c.version, c.backend) == where]
            texts = list(dict.fromkeys(c.text for c in mine if c.seed is None))
            texts += [f"seed {c.seed}: {c.text}" for c in mine if c.seed is not None]
            row.append("<br>".join(t.replace("|", "\\|") for t in texts) or "—")
        lines.append(f"| `{scenario}` | " + " | ".join(row) + " |")
    return lines


def _started(folder: Path) -> dt.datetime | None:
    found = _STAMP.match(folder.name)
    if found is None:
        return None
    return dt.datetime.strptime(found[1], "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)


def sessions(folders: Sequence[Path]) -> list[Session]:
    found: list[Session] = []
    for folder in folders:
        index = folder / SUITE_INDEX
        if index.is_file():
            entries = read_index(index)
            runs = [Path(str(e["folder"])) for e in entries if "folder" in e]
            refused = sum(1 for e in entries if "refused" in e)
        else:
            runs = [p.parent for p in folder.rglob("result.json")]
            refused = 0
        times = sorted(t for t in (_started(r) for r in runs) if t is not None)
        machine, load = None, None
        try:
            raw = json.loads((folder / SUITE_MACHINE).read_text(encoding="utf-8"))
            machine, load = Machine.from_json(raw["machine"]), float(raw["load_average"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        first, last = (times[0], times[-1]) if times else (None, None)
        found.append(Session(folder, len(runs), refused, first, last, machine, load))
    return found


def _when(session: Session) -> str:
    if session.first is None or session.last is None:
        return "—"
    first, last = session.first.strftime("%Y-%m-%d %H:%M"), session.last.strftime("%H:%M")
    return f"{first} – {last}"


def page(folders: Sequence[Path], cells: Sequence[Cell], command: str, made: dt.datetime) -> str:
    """The generated page: what made it, each session's dates and machine, the table, and
    where two versions of a target differ."""
    title = ", ".join(dict.fromkeys(target_title(t, v) for t, v, _ in _columns(cells)))
    lines = [
        f"# Scenario suite: {title}",
        "",
        "<!-- Generated by `lab tables suite`: do not edit; run the command again. -->",
        "",
        f"Generated by `{command}` on {made.strftime('%Y-%m-%d %H:%M')} UTC from the "
        "sessions below (`pytest scenarios/test_scenarios.py --lab-runs-dir DIR`).",
        "",
        "| session | runs | started (UTC) | load | machine |",
        "|---|---|---|---|---|",
    ]
    for s in sessions(folders):
        machine = "not recorded" if s.machine is None else s.machine.describe()
        load = "—" if s.load is None else f"{s.load:.1f}"
        counted = f"{s.runs} runs, {s.refused} refused"
        lines.append(f"| `{s.folder}` | {counted} | {_when(s)} | {load} | {machine} |")
    lines += ["", *table(cells), "", *version_changes(cells), *LEGEND]
    return "\n".join(lines) + "\n"


def version_changes(cells: Sequence[Cell]) -> list[str]:
    """A section listing the scenarios whose verdicts differ between versions of a target on
    one backend (none when the cells hold one version each)."""
    verdicts: dict[tuple[str, str, str], dict[str | None, set[str]]] = {}
    for c in cells:
        key = (c.target, c.backend, c.scenario)
        verdicts.setdefault(key, {}).setdefault(c.version, set()).add(c.verdict or "refused")
    changed = []
    for (target, backend, scenario), by_version in verdicts.items():
        if len(by_version) > 1 and len({frozenset(v) for v in by_version.values()}) > 1:
            ordered = sorted(by_version, key=_version_key)
            said = "; ".join(f"{v or '?'}: {', '.join(sorted(by_version[v]))}" for v in ordered)
            changed.append(f"- `{scenario}` ({_column(target, None, backend)}): {said}")
    versions = {(c.target, c.backend, c.version) for c in cells}
    if len(versions) == len({(t, b) for t, b, _ in versions}):
        return []
    head = ["## Between versions", ""]
    if not changed:
        return [*head, "Every scenario has the same verdicts at every version.", ""]
    order = {name: i for i, name in enumerate(SCENARIOS)}
    changed.sort(key=lambda line: order.get(line.split("`")[1], len(order)))
    return [*head, "The scenarios whose verdicts differ between versions:", "", *changed, ""]


LEGEND = (
    "*held*: the documents' prediction held. *deviation … reproduced*: it did not, exactly "
    "as the target declares (see the target's page). **broken** / **unknown**: it did not, "
    "or the run cannot say, with the violation kinds and reasons. *refused*: the one line "
    "`lab run` refuses the scenario with on this target and backend. *lost* counts "
    "acknowledged messages never received (a run may hold with a loss where the documents "
    "predict one, as in split-brain: the loss must be there and found); *longest gap* is the "
    "longest time between two acknowledged sends. *load*: the machine's 1-minute load "
    "average as the session began.",
)


def check_folders(folders: Sequence[Path]) -> None:
    """UsageError (one line) for a folder that does not exist or holds no runs."""
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"{folder}: no such folder")
    if not collect(folders):
        raise UsageError(f"no runs in {', '.join(map(str, folders))}")
