"""The detection benchmark's page (`--page FILE`), generated from the store's trials of the
current generator version (lab.bench.detection_store), never edited by hand: when and by
which commands its trials were made, what was left out, the headline, the targets, a table
bug × generator for the bugs written before the generator and one for those written after,
throughput, the survival curves (`FILE-survival.svg` beside it), the paired comparison, every
trial, and with `--named` the matrix bug × named scenario. `FILE` with `.json` holds the
figures."""

from __future__ import annotations

import datetime as dt
import json
import shlex
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lab.bench.detection_canary import misses, stages, why_missed
from lab.bench.detection_pace import paces
from lab.bench.detection_page_stats import (
    comparison_lines,
    pace_lines,
    stats_json,
    survival_lines,
    target_lines,
)
from lab.bench.detection_request import GENERATORS, DetectionRequest
from lab.bench.detection_results import NO_BUG, CellResult, NamedResult, ShrinkResult
from lab.bench.detection_store import DEFAULT_STORE, Selection
from lab.bench.detection_table import headline, median_minutes, named_summary, sets_of
from lab.bench.zoo import Bug
from lab.ground.files import write_text

__all__ = ["Page", "command_of", "generators_of", "make_page", "write_page"]


def command_of(request: DetectionRequest) -> str:
    """The `lab bench detection` command that asks for `request`."""
    args = ["lab", "bench", "detection"]
    store = [] if request.store == DEFAULT_STORE else ["--store", str(request.store)]
    if request.from_store:
        args += ["--from-store", *store, "--budget", f"{request.budget_s:g}s"]
        return shlex.join([*args, "--page", str(request.page)])
    if request.bugs:
        args += ["--bugs", ",".join(request.bugs)]
    args += ["--budget", f"{request.budget_s:g}s", "--trials", str(request.trials)]
    args += ["--generators", ",".join(request.generators), "--jobs", str(request.jobs)]
    args += ["--seed", str(request.seed), "--shrink-budget", f"{request.shrink_budget_s:g}s"]
    args += ["--named"] if request.named else []
    args += ["--control"] if request.control else []
    args += store
    if request.page is not None:
        args += ["--page", str(request.page)]
    return shlex.join(args)


def generators_of(cells: Sequence[CellResult], asked: Sequence[str] = ()) -> list[str]:
    """The generators of `cells` and `asked`: the lab's in their order, then others by name."""
    seen = {c.generator for c in cells} | set(asked)
    return [g for g in GENERATORS if g in seen] + sorted(seen - set(GENERATORS))


def _generators(request: DetectionRequest, cells: Sequence[CellResult]) -> list[str]:
    """A run's page shows the generators it ran and those of the store; --from-store, the
    store's."""
    return generators_of(cells, () if request.from_store else request.generators)


def _cell(cells: list[CellResult], shrink: ShrinkResult | None) -> str:
    found = [c for c in cells if c.found]
    if not cells:
        return "–"
    text = f"{len(found)}/{len(cells)}"
    median = median_minutes(found)
    if median is not None:
        runs = sorted(c.runs for c in found)[len(found) // 2]
        text += f", {median:.1f} min, {runs} runs"
    else:
        text += f" ({sum(c.runs for c in cells)} runs)"
    if any(c.error for c in cells):
        text += f" ({sum(bool(c.error) for c in cells)} failed to run)"
    if shrink is not None:
        text += f"; {shrink.shown()}"
    if cells[0].bug is not None:
        text += f"<br>{stages(cells)}"
        missed = misses(cells)
        text += f"<br>misses: {missed}" if missed else ""
    return text


def _bug_table(
    cells: Sequence[CellResult], shrinks: Sequence[ShrinkResult], generators: Sequence[str]
) -> list[str]:
    lines = [
        "| bug | design | " + " | ".join(generators) + " | kinds seen |",
        "|---|---|" + "---|" * len(generators) + "---|",
    ]
    for row in sorted(dict.fromkeys(c.row for c in cells)):
        name, design = row
        mine = [c for c in cells if c.row == row]
        texts = [
            _cell(
                [c for c in mine if c.generator == g],
                next((s for s in shrinks if s.bug == name and s.generator == g), None),
            )
            for g in generators
        ]
        kinds = ", ".join(sorted({k for c in mine if c.found for k in c.kinds})) or "–"
        lines.append(f"| {name} | {design} | " + " | ".join(texts) + f" | {kinds} |")
    return lines


def _found_line(cells: Sequence[CellResult], generators: Sequence[str]) -> str:
    parts = []
    for g in generators:
        bugs = {c.bug for c in cells if c.generator == g}
        found = {c.bug for c in cells if c.generator == g and c.found}
        parts.append(f"{g} {len(found)}/{len(bugs)}")
    return "Found in at least one trial: " + ", ".join(parts) + "."


def _sets(
    cells: Sequence[CellResult], shrinks: Sequence[ShrinkResult], generators: Sequence[str]
) -> list[str]:
    split = sets_of(cells)
    lines: list[str] = []
    for key, title in (
        ("before", "Bugs written before the generator"),
        ("after", "Bugs written after the generator (`after_generator = true`)"),
    ):
        lines += [f"## {title}", ""]
        if split[key]:
            lines += [*_bug_table(split[key], shrinks, generators), ""]
            lines += [_found_line(split[key], generators), ""]
        else:
            lines += ["No trial of such a bug in the store.", ""]
    control = [c for c in cells if c.bug is None]
    if control:
        lines += ["## The tree without a bug (control)", ""]
        lines += [*_bug_table(control, shrinks, generators), ""]
    lines += [
        "Each cell: trials that found the bug / trials, the median minutes and runs to the "
        "first broken run over those that found it (the runs of all trials when none did), "
        "and what `lab shrink` made of the first one found; then reached / triggered / "
        "detected: how many trials ran the bug's code, made it do what the correct code would "
        "not, and saw it, each with the median minutes from the campaign's start; and for the "
        "trials that missed, which stage failed (never reached: the schedule never ran the "
        "code; reached, never triggered: it never provoked the bug; triggered, not detected: "
        "the checker and the predictions did not see it; no canary: the bug has none).",
        "",
    ]
    return lines


def _minutes(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _trials(cells: Sequence[CellResult]) -> list[str]:
    lines = [
        "## Trials",
        "",
        "Times in minutes from the campaign's start. `unknown` counts the runs before the "
        "finding (or in all) whose verdict was unknown; `run seed` reproduces the finding: "
        "`lab run random --seed N` (with the design's `--mode`) on the tree with the bug.",
        "",
        "| bug | generator | trial | campaign seed | found | runs | faults | unknown | "
        "reached | triggered | detected | missed because | run seed | kinds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in sorted(cells, key=lambda c: (c.bug is None, c.name, c.generator, c.trial)):
        found = "yes" if c.found else ("failed to run: " + c.error if c.error else "no")
        canary = c.canary and c.bug is not None
        lines.append(
            f"| {c.name} | {c.generator} | {c.trial} | {c.seed} | {found} | {c.runs} | "
            f"{c.faults} | {c.unknown} | {_minutes(c.reached) if canary else '–'} | "
            f"{_minutes(c.triggered) if canary else '–'} | {_minutes(c.minutes)} | "
            f"{(why_missed(c) or '–') if c.bug is not None else '–'} | "
            f"{c.run_seed if c.run_seed is not None else '–'} | {', '.join(c.kinds) or '–'} |"
        )
    return [*lines, ""]


def _named(named: Sequence[NamedResult]) -> list[str]:
    """One table per design: bugs down, named scenarios across; a failing one shows its
    violation kinds."""
    out = [
        "## The named scenarios against each bug (seed 1)",
        "",
        "Each run's verdict and, for a bug with canaries, how far it got: `triggered` (a held "
        "run that triggered the bug is a miss of the checker or the prediction), `reached`, "
        "`not reached`.",
        "",
    ]
    for letter in ("J", "C"):  # the replicated group's, then the active-passive cluster's
        results = [n for n in named if n.label.startswith(letter)]
        if not results:
            continue
        columns = sorted(
            dict.fromkeys((n.label, n.scenario) for n in results), key=lambda x: int(x[0][1:])
        )
        out.append("| bug | " + " | ".join(f"{lab} {sc}" for lab, sc in columns) + " |")
        out.append("|---|" + "---|" * len(columns))
        rows = sorted(dict.fromkeys(n.bug or NO_BUG for n in results))
        for row in rows:
            cells = []
            for _label, scenario in columns:
                hit = next((n for n in results if n.row[0] == row and n.scenario == scenario), None)
                if hit is None:
                    cells.append("–")
                elif hit.failed:
                    cells.append(f"**{hit.verdict}** ({', '.join(hit.kinds)}){hit.stage}")
                elif hit.reason:
                    cells.append(f"{hit.verdict}: {hit.reason}")
                else:
                    cells.append(f"{hit.verdict}{hit.stage}")
            out.append(f"| {row} | " + " | ".join(cells) + " |")
        out.append("")
    return out


@dataclass(frozen=True)
class Page:
    text: str
    figures: dict[str, Any]  # the .json beside it
    last: str  # its headline


def make_page(
    request: DetectionRequest,
    selection: Selection,
    zoo: Sequence[Bug],
    version: str,
    machine: str,
    made: dt.datetime,
    figure: Path | None,
) -> Page:
    """The page from the store's `selection` (the statistics need SciPy: lab.ground.extras
    STATISTICS); `figure`: the survival image written beside it, if any."""
    from lab.bench.detection_stats import compare, survival
    from lab.bench.detection_targets import targets

    cells, named = list(selection.cells), list(selection.named)
    generators = _generators(request, cells)
    budget_s = request.budget_s
    parts = [headline(cells, generators, budget_s)] if cells else []
    parts += [named_summary(named)] if named else []
    last = "; ".join(parts) if cells else f"detection: {'; '.join(parts) or 'no trial stored'}"
    found_targets = targets(cells, named, zoo, budget_s)
    found_paces = paces(cells, generators, budget_s)
    curves = [survival(cells, g, budget_s) for g in generators]
    comparisons = [compare(cells, generators[0], g, budget_s) for g in generators[1:]]
    commands = "; ".join(f"`{c}`" for c in selection.commands) or "–"
    lines = [
        "# Observed: the detection benchmark",
        "",
        "Generated by the command below; do not edit by hand.",
        "",
        f"- made {made:%Y-%m-%d %H:%M} UTC by `{command_of(request)}` on {machine}",
        f"- trials stored {selection.first or '–'} to {selection.last or '–'} by {commands}",
        f"- machines: {'; '.join(selection.machines) or '–'}",
        f"- generator version {version}; the lab's commits: {', '.join(selection.commits) or '–'}",
        f"- the store ({request.store}): {len(cells)} trial(s) of this version and a budget "
        f"of {budget_s / 60:g} min counted; {selection.left_out_text()}",
        "",
        f"**{last}**",
        "",
        *target_lines(found_targets),
        *_sets(cells, selection.shrinks, generators),
        *pace_lines(found_paces),
        *survival_lines(curves, figure),
        *comparison_lines(comparisons),
        *_trials(cells),
    ]
    if named:
        lines += _named(named)
    figures = {
        "version": version,
        "budget_s": budget_s,
        "left_out": dict(selection.left_out),
        "cells": [{k: v for k, v in asdict(c).items() if k != "folder"} for c in cells],
        "shrinks": [asdict(s) for s in selection.shrinks],
        "named": [asdict(n) for n in named],
        **stats_json(found_targets, found_paces, curves, comparisons),
    }
    return Page("\n".join(lines).rstrip("\n") + "\n", figures, last)


def write_page(
    request: DetectionRequest,
    selection: Selection,
    zoo: Sequence[Bug],
    version: str,
    machine: str,
) -> Page:
    """Write the page, its survival image and its figures (.json) beside it."""
    from lab.bench.detection_figure import figure_path, write_survival_figure
    from lab.bench.detection_stats import survival

    assert request.page is not None
    generators = _generators(request, selection.cells)
    figure = figure_path(request.page)
    request.page.parent.mkdir(parents=True, exist_ok=True)
    curves = [survival(selection.cells, g, request.budget_s) for g in generators]
    write_survival_figure(curves, figure)
    made = make_page(request, selection, zoo, version, machine, dt.datetime.now(dt.UTC), figure)
    write_text(request.page, made.text)
    write_text(request.page.with_suffix(".json"), json.dumps(made.figures, indent=2) + "\n")
    return made
