"""Verdict tables from scenario-suite sessions, for any target: the generated pages of
docs/observed/ (`lab tables suite RUNS_DIR… --out PAGE`).

    .venv/bin/pytest scenarios/test_scenarios.py --lab-target qpid-broker-j \\
        --lab-runs-dir runs/brokerj-suite [--backend docker] [--lab-seed 7]
    .venv/bin/lab tables suite runs/brokerj-suite --out docs/observed/suite-qpid-broker-j.md

Each folder is read as the suite left it (lab.targets.suite): `suite.jsonl`, every run and
every refusal with its one-line reason; `machine.json`, the machine the session ran on;
and each run's result.json. A folder without an index is searched for result.json files
(refusals are then unknown). Nothing is run: only files are read.

    cells: lab.reporting.suite_cells.collect(folders) (a Cell per run or refusal)
    rates_table(cells, …) → [line] a row per scenario, target and backend: its runs counted
                                   held / deviation / broken / unknown, each a rate with its
                                   interval, the service gap's median and maximum, and what
                                   changed (lab.reporting.suite_rates)
    table(cells) → [line]          a row per scenario (the catalog's order), a column per
                                   target and backend; a cell's runs one under the other
    sessions(folders) → [Session]  where, when and on what each session ran
                                   (lab.reporting.suite_sessions)
    page(…) → text                 the whole generated page

A cell says held, deviation (the declaration's id), broken or unknown with the figures
that matter (acknowledged loss, the longest gap in service), or refused with the reason.
A session run with `--lab-seeds` has a run per seed of each scenario: its rates.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import TypeAlias

from lab.reporting.suite_cells import Cell
from lab.reporting.suite_declared import Declared, no_declarations
from lab.reporting.suite_rates import Baseline, Tally, flags, tally
from lab.reporting.suite_sessions import sessions
from lab.reporting.suite_versions import (
    BACKEND_NAMES,
    column,
    target_title,
    version_changes,
    version_key,
)
from scenarios.catalog import SCENARIOS

__all__ = [
    "page",
    "rates_table",
    "seeds_text",
    "sessions",
    "table",
]


Column: TypeAlias = tuple[str, str | None, str, tuple[tuple[str, str], ...]]


def _columns(cells: Sequence[Cell]) -> list[Column]:
    """Target, then version (oldest first), then backend (process before docker), then the
    target settings their session chose (none first)."""
    rank = {name: i for i, name in enumerate(BACKEND_NAMES)}
    found = {(c.target, c.version, c.backend, c.chosen) for c in cells if c.verdict is not None}
    ran = {k[:3] for k in found}  # a refusal has no settings: it is shown in its target's columns
    found |= {(c.target, c.version, c.backend, ()) for c in cells if c.where not in ran}
    return sorted(
        found, key=lambda k: (k[0], version_key(k[1]), rank.get(k[2], 99), k[2], len(k[3]), k[3])
    )


def _scenarios(cells: Sequence[Cell]) -> list[str]:
    """The scenarios in the catalog's order (unknown ones last, by name)."""
    order = {name: i for i, name in enumerate(SCENARIOS)}
    return sorted({c.scenario for c in cells}, key=lambda s: (order.get(s, len(order)), s))


def seeds_text(seeds: Sequence[int], dash: str = "–") -> str:
    """`seed 7`, `seeds 7, 9` or a run of them as `seeds 7–11` (with `dash`)."""
    ordered = sorted(set(seeds))
    if len(ordered) > 2 and ordered[-1] - ordered[0] == len(ordered) - 1:
        return f"seeds {ordered[0]}{dash}{ordered[-1]}"
    return ("seed " if len(ordered) == 1 else "seeds ") + ", ".join(map(str, ordered))


def _rate_row(scenario: str, column: str, counted: Tally, said: Sequence[str]) -> str:
    deviation = str(counted.rate("deviation"))
    if counted.deviations:  # which declarations, when any was reproduced
        ids = ", ".join(f"`{i}` {n}" for i, n in sorted(counted.deviations.items()))
        deviation += f": {ids}"
    median, top = counted.gap_median_s, counted.gap_max_s
    gap = "—" if median is None or top is None else f"{median:.1f} / {top:.1f} s"
    cells = [
        f"`{scenario}`",
        column,
        f"{counted.runs} ({seeds_text(counted.seeds)})" if counted.seeds else str(counted.runs),
        str(counted.rate("held")),
        deviation,
        str(counted.rate("broken")),
        str(counted.rate("unknown").count),
        gap,
        "<br>".join(f"**{line}**" for line in said) or "—",
    ]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def rates_table(
    cells: Sequence[Cell], declared: Declared, before: Baseline | None
) -> tuple[list[str], list[Tally]]:
    """The rates' Markdown table (a row per scenario, target, backend and target settings
    that ran, in the
    catalog's order; then the refused scenarios, a line per reason) and the tallies it
    shows; `declared` gives the deviations a target declares for a run, `before` the rates
    published before (None: none)."""
    lines = [
        "| scenario | target, backend | runs | held | deviation | broken | unknown "
        "| service gap (median / max) | changed |",
        "|---" * 9 + "|",
    ]
    counted = {t.key: t for t in tally(c.record() for c in cells if c.verdict is not None)}
    for scenario in _scenarios(cells):
        for target, version, backend, settings in _columns(cells):
            heading = column(target, version, backend, settings)
            ref = target if version is None else f"{target}@{version}"
            found = counted.get((scenario, ref, backend, settings))
            if found is not None:
                given = dict(found.settings)
                said = flags(found, declared(ref, scenario, backend, found.mode, given), before)
                lines.append(_rate_row(scenario, heading, found, said))
    return lines + _refusals(cells), list(counted.values())


def _refusals(cells: Sequence[Cell]) -> list[str]:
    """The scenarios refused, a line per target, backend and reason (after the rates)."""
    grouped: dict[tuple[str, str], list[str]] = {}
    order = {name: i for i, name in enumerate(SCENARIOS)}
    for c in sorted(cells, key=lambda c: (order.get(c.scenario, len(order)), c.scenario)):
        if c.verdict is None:
            names = grouped.setdefault((column(c.target, c.version, c.backend), c.text), [])
            if c.scenario not in names:
                names.append(c.scenario)
    if not grouped:
        return []
    lines = ["", "Refused before anything started, with the reason `lab run` gives:", ""]
    for (heading, text), names in grouped.items():
        why = text.removeprefix("refused: ").replace("|", "\\|")
        lines.append(f"- {heading}: {', '.join(f'`{n}`' for n in names)} — {why}")
    return lines


def table(cells: Sequence[Cell]) -> list[str]:
    """The Markdown table: a row per scenario (the catalog's order), a column per target,
    version and backend (process before docker)."""
    columns = _columns(cells)
    scenarios = _scenarios(cells)
    lines = [
        "| scenario | " + " | ".join(column(*k) for k in columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for scenario in scenarios:
        row = []
        for target, version, backend, settings in columns:
            mine = [
                c
                for c in cells
                if (c.scenario, *c.where) == (scenario, target, version, backend)
                and (c.chosen == settings or c.verdict is None)
            ]
            texts = list(dict.fromkeys(c.text for c in mine if c.seed is None))
            texts += [f"seed {c.seed}: {c.text}" for c in mine if c.seed is not None]
            row.append("<br>".join(t.replace("|", "\\|") for t in texts) or "—")
        lines.append(f"| `{scenario}` | " + " | ".join(row) + " |")
    return lines


REJUDGED = (
    " Every run was judged again by the lab that made this page, from its own history and "
    "events (`--rejudge`): a run whose verdict then differs from the one it recorded says so."
)


def page(
    folders: Sequence[Path],
    cells: Sequence[Cell],
    command: str,
    made: dt.datetime,
    declared: Declared = no_declarations,
    before: Baseline | None = None,
    target: str | None = None,
    rejudged: bool = False,
) -> str:
    """The generated page (of one target's runs, with `target`): what made it, each session's
    dates, load and machine, the rates
    (compared with the declared deviations' and those published `before`), every run, and
    where two versions of a target differ."""
    title = ", ".join(dict.fromkeys(target_title(t, v) for t, v, _, _ in _columns(cells)))
    lines = [
        f"# Scenario suite: {title}",
        "",
        "<!-- Generated by `lab tables suite`: do not edit; run the command again. -->",
        "",
        f"Generated by `{command}` on {made.strftime('%Y-%m-%d %H:%M')} UTC from the "
        "sessions below (`pytest scenarios/test_scenarios.py --lab-runs-dir DIR`)."
        + REJUDGED
        * rejudged,
        "",
        "| session | runs | started (UTC) | load | machine |",
        "|---|---|---|---|---|",
    ]
    for s in sessions(folders, target):
        machine = "not recorded" if s.machine is None else s.machine.describe()
        counted = f"{s.runs} runs, {s.refused} refused"
        lines.append(f"| `{s.folder}` | {counted} | {s.when} | {s.load_text} | {machine} |")
    compared = "" if before is None else f", compared with the rates of {before.day}"
    rates, _ = rates_table(cells, declared, before)
    lines += ["", f"## Rates over seeds{compared}", "", *rates, "", *RATES_LEGEND]
    lines += ["", "## Every run", "", *table(cells), "", *version_changes(cells), *LEGEND]
    return "\n".join(lines) + "\n"


RATES_LEGEND = (
    "A row counts a scenario's runs on one target and backend (and the target settings their "
    "session chose, when not the defaults), one run per seed: *held*, "
    "*deviation* (a declared deviation reproduced, by id), *broken* and *unknown*, each as "
    "K/N with its 95 % Wilson interval: with five runs, 5/5 means the true rate is likely "
    "above 57 %, not that it is 100 %. *service gap*: the median and the largest, over the "
    "runs, of a run's longest time between two acknowledged sends; on a loaded machine it "
    "grows with the load. *changed*: a declared deviation whose rate is unlike the one its "
    "declaration gives (`seen`; 0/N: fixed upstream?), a rate unlike the one published "
    "before (intervals that do not overlap), or a verdict that held every time before and "
    "broke now. [Reading rates](../reading-rates.md) says more.",
)


LEGEND = (
    "*held*: the documents' prediction held. *deviation … reproduced*: it did not, exactly "
    "as the target declares (see the target's page). **broken** / **unknown**: it did not, "
    "or the run cannot say, with the violation kinds and reasons. *refused*: the one line "
    "`lab run` refuses the scenario with on this target and backend. *lost* counts "
    "acknowledged messages never received (a run may hold with a loss where the documents "
    "predict one, as in split-brain: the loss must be there and found); *longest gap* is the "
    "longest time between two acknowledged sends. *load*: the machine's 1-minute load "
    "average as the session began, and its median and maximum as the runs ended.",
)
