"""The README's table of Broker-J's verdicts, made from a scenario suite's run folders.

    .venv/bin/pytest scenarios/test_scenarios.py --lab-target qpid-broker-j \\
        --lab-runs-dir runs/brokerj-suite [--backend docker]
    .venv/bin/python -m lab.targets.brokerj.verdict_table runs/brokerj-suite [MORE_DIRS]

Each folder is read as the suite left it: `suite.jsonl` (lab.targets.suite: every run and
every refusal, with the one-line reason) and each run's result.json; a folder without an
index is searched for result.json files (refusals are then unknown). One row per scenario,
one column per backend; a cell says held, deviation (the declaration's id), broken or
unknown with the figures that matter (acknowledged loss, the longest gap in service), or
refused with the reason. Nothing is run: only files are read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.judge.expectations import UNCHECKABLE
from lab.targets.suite import SUITE_INDEX, read_index
from scenarios.catalog import SCENARIOS

__all__ = ["Cell", "collect", "main", "table"]

COLUMNS = {"process": "Broker-J, local JVMs", "docker": "Broker-J, containers"}


@dataclass(frozen=True)
class Cell:
    """One run or one refusal of a scenario on a backend."""

    scenario: str
    backend: str
    text: str
    seed: int | None = None


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


def collect(folders: Sequence[Path]) -> list[Cell]:
    """Every run and refusal the folders hold (InputError-free: unreadable lines skipped)."""
    cells: list[Cell] = []
    for folder in folders:
        index = folder / SUITE_INDEX
        if index.is_file():
            for entry in read_index(index):
                scenario, backend = str(entry.get("scenario")), str(entry.get("backend"))
                if "refused" in entry:
                    cells.append(Cell(scenario, backend, f"refused: {entry['refused']}"))
                elif "folder" in entry:
                    result = _result(Path(str(entry["folder"])))
                    seed = None if result is None else result.get("seed")
                    cells.append(Cell(scenario, backend, describe(result), seed))
            continue
        for path in sorted(folder.rglob("result.json")):
            result = _result(path.parent)
            if result is not None:
                cell = Cell(result["scenario"], result["backend"], describe(result), result["seed"])
                cells.append(cell)
    return cells


def table(cells: Sequence[Cell]) -> list[str]:
    """The Markdown table: a row per scenario (the catalog's order), a column per backend."""
    backends = [b for b in COLUMNS if any(c.backend == b for c in cells)]
    backends += sorted({c.backend for c in cells} - set(backends))
    order = {name: i for i, name in enumerate(SCENARIOS)}
    scenarios = sorted({c.scenario for c in cells}, key=lambda s: (order.get(s, len(order)), s))
    lines = [
        "| scenario | " + " | ".join(COLUMNS.get(b, b) for b in backends) + " |",
        "|---" * (len(backends) + 1) + "|",
    ]
    for scenario in scenarios:
        row = []
        for backend in backends:
            mine = [c for c in cells if c.scenario == scenario and c.backend == backend]
            texts = list(dict.fromkeys(c.text for c in mine if c.seed is None))
            texts += [f"seed {c.seed}: {c.text}" for c in mine if c.seed is not None]
            row.append("<br>".join(t.replace("|", "\\|") for t in texts) or "—")
        lines.append(f"| `{scenario}` | " + " | ".join(row) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.targets.brokerj.verdict_table",
        description="Broker-J's verdict table (Markdown) from a scenario suite's run folders.",
    )
    parser.add_argument("folders", nargs="+", type=Path, help="--lab-runs-dir of a suite")
    args = parser.parse_args(argv)
    missing = [str(f) for f in args.folders if not f.is_dir()]
    if missing:
        print(f"verdict_table: error: no such folder: {missing[0]}", file=sys.stderr)
        return 2
    cells = collect(args.folders)
    if not cells:
        print(
            f"verdict_table: error: no runs in {', '.join(map(str, args.folders))}", file=sys.stderr
        )
        return 2
    print("\n".join(table(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
