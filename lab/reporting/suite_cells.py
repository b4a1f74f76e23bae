"""The cells of the verdict tables: each run and each refusal of scenario-suite sessions,
read from the folders they left (lab.targets.suite: `suite.jsonl`, each run's result.json),
and the words a run's cell says. Nothing is run: only files are read.

    collect(folders[, read]) → [Cell]  one per run or refusal; `read` gives a run folder's
                                       result (default: its result.json; judged again:
                                       lab.reporting.suite_rejudge)
    only(cells, "NAME[@VERSION]")      the cells of one target, or one version of it
    describe(result) → str             a run's cell: held, deviation (the declaration's id),
                                       broken or unknown with the figures that matter
    check_folders(folders)             UsageError for a folder missing or holding no runs
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from lab.ground.errors import LabError, UsageError
from lab.judge.expectations import UNCHECKABLE
from lab.reporting.suite_rates import RunRecord
from lab.targets.suite import SUITE_INDEX, read_index, run_settings
from scenarios.catalog import scenario_named

Settings: TypeAlias = tuple[tuple[str, str], ...]  # target settings, sorted by name

__all__ = [
    "Cell",
    "Read",
    "Settings",
    "check_folders",
    "chosen_settings",
    "collect",
    "describe",
    "only",
    "read_result",
]


@dataclass(frozen=True)
class Cell:
    """One run or one refusal of a scenario on a target (at a version) and backend."""

    scenario: str
    target: str
    backend: str
    text: str
    seed: int | None = None
    verdict: str | None = None  # None: refused
    deviation: str | None = None  # the declaration a `deviation` verdict reproduced
    gap_s: float | None = None  # the run's longest gap between acknowledged sends
    mode: str = ""
    version: str | None = None  # the target's version (None: none, or not recorded)
    settings: tuple[tuple[str, str], ...] = ()  # the target settings the run was given
    chosen: Settings = ()  # those the session chose (not its scenario's own): its column

    @property
    def where(self) -> tuple[str, str | None, str]:
        """Target, version and backend."""
        return self.target, self.version, self.backend

    @property
    def ref(self) -> str:
        """The target as the rates count it: `NAME`, or `NAME@VERSION` when recorded."""
        return self.target if self.version is None else f"{self.target}@{self.version}"

    def record(self) -> RunRecord:
        """The run as the rates count it: a verdict other than the judge's (a run that was
        interrupted, or wrote no result) counts as unknown."""
        counted = ("held", "deviation", "broken")
        outcome = self.verdict if self.verdict in counted else "unknown"
        gap = self.gap_s
        return RunRecord(
            self.scenario, self.ref, self.backend, self.seed, outcome, self.deviation, gap,
            self.mode, self.settings, self.chosen,
        )  # fmt: skip


Read: TypeAlias = Callable[[Path], dict[str, Any] | None]  # a run folder → its result


def chosen_settings(folder: Path, target: str, given: Settings) -> Settings:
    """The target settings a session chose for the run in `folder` (`--lab-target-setting`):
    those it was given (`given`) other than its scenario's own (split-brain sets Broker-J's
    election timeouts itself); all of them for a scenario this lab does not know."""
    try:
        spec = json.loads((folder / "spec.json").read_text(encoding="utf-8"))
        mode = spec["group"].get("mode") or None
        scenario = scenario_named(str(spec["scenario"])).in_mode(mode)
        own = dict(scenario.spec(0).group.target_context.get(target) or {})
    except (OSError, ValueError, KeyError, TypeError, AttributeError, LabError):
        return given
    return tuple((k, v) for k, v in given if own.get(k) != v)


def read_result(folder: Path) -> dict[str, Any] | None:
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
    if result.get("recorded_verdict"):  # re-judged (lab.reporting.suite_rejudge)
        shown += f" [re-judged; the run recorded {result['recorded_verdict']}]"
    deviation = result.get("deviation") or {}
    if verdict == "held":
        if deviation.get("outcome") == "not seen":  # the rates table says whether it is news
            ids = ", ".join(f"`{i}`" for i in deviation.get("declared") or ()) or "?"
            return f"held{shown} — declared deviation not seen ({ids})"
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
    scenario: str,
    target: str,
    backend: str,
    result: dict[str, Any] | None,
    seed: int | None = None,
    mode: str = "",
    version: str | None = None,
    settings: tuple[tuple[str, str], ...] = (),
    chosen: Settings = (),
) -> Cell:
    if result is None:
        said = describe(None)
        return Cell(
            scenario, target, backend, said, seed, "unknown", mode=mode, version=version,
            settings=settings, chosen=chosen,
        )  # fmt: skip
    version = _version(result.get("target_version") or version)
    verdict = str(result.get("verdict", "unknown"))
    deviation = (result.get("deviation") or {}).get("id") if verdict == "deviation" else None
    gap = (result.get("metrics") or {}).get("unavailable_longest_s")
    return Cell(
        scenario, target, backend, describe(result), result.get("seed", seed), verdict,
        None if deviation is None else str(deviation), None if gap is None else float(gap),
        str(result.get("mode") or mode), version, settings, chosen,
    )  # fmt: skip


def _version(raw: Any) -> str | None:
    return None if raw is None else str(raw)


def _target(entry: dict[str, Any]) -> tuple[str, str | None]:
    """An index line's target and version (`target_version`, or `NAME@VERSION`)."""
    name, _, version = str(entry.get("target")).partition("@")
    return name, _version(entry.get("target_version") or version or None)


def _settings(folder: Path, target: str) -> tuple[Settings, Settings]:
    """The target settings a run was given, and those of them its session chose."""
    given = run_settings(folder, target)
    return given, chosen_settings(folder, target, given)


def collect(folders: Sequence[Path], read: Read | None = None) -> list[Cell]:
    """Every run and refusal the folders hold (unreadable index lines are skipped); each
    run's result as `read` gives it (default: its result.json)."""
    read = read or read_result
    cells: list[Cell] = []
    for folder in folders:
        index = folder / SUITE_INDEX
        if not index.is_file():
            for path in sorted(folder.rglob("result.json")):
                result = read(path.parent)
                if result is not None:
                    target, backend = str(result.get("target")), str(result.get("backend"))
                    given, chosen = _settings(path.parent, target)
                    scenario = str(result["scenario"])
                    cells.append(
                        _run_cell(scenario, target, backend, result, None, "", None, given, chosen)
                    )
            continue
        for entry in read_index(index):
            scenario, (target, version) = str(entry.get("scenario")), _target(entry)
            backend, mode = str(entry.get("backend")), str(entry.get("mode") or "")
            if "refused" in entry:
                said = f"refused: {entry['refused']}"
                cells.append(Cell(scenario, target, backend, said, mode=mode, version=version))
            elif "folder" in entry:
                run = Path(str(entry["folder"]))
                result, (given, chosen) = read(run), _settings(run, target)
                seed = entry.get("seed")
                seed = seed if isinstance(seed, int) else None
                cells.append(
                    _run_cell(scenario, target, backend, result, seed, mode, version, given, chosen)
                )
    return cells


def only(cells: Sequence[Cell], ref: str | None) -> list[Cell]:
    """The cells of one target (`NAME`) or of one version of it (`NAME@VERSION`)."""
    if ref is None:
        return list(cells)
    name, _, version = ref.partition("@")
    return [c for c in cells if c.target == name and (not version or c.version == version)]


def check_folders(folders: Sequence[Path]) -> None:
    """UsageError (one line) for a folder that does not exist or holds no runs."""
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"{folder}: no such folder")
    if not collect(folders):
        raise UsageError(f"no runs in {', '.join(map(str, folders))}")
