"""The table of the scenario suite on hosts, one column per target, made from the suites' run
folders (`--lab-runs-dir` of `pytest scenarios/test_scenarios.py --backend ssh --lab-hosts …`),
with the date, the machine and the hosts it ran on. Nothing is run: only files are read.

    .venv/bin/python -m lab.backends.ssh.suite_table runs/hosts-ref runs/hosts-bj \\
        --hosts "a rig of 5 namespace hosts" > docs/observed/hosts-suite.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path

from lab.targets.brokerj.verdict_table import _result, describe
from lab.targets.suite import SUITE_INDEX, read_index
from scenarios.catalog import SCENARIOS

__all__ = ["main", "rows"]


def rows(folders: Sequence[Path]) -> tuple[list[str], dict[str, dict[str, list[str]]]]:
    """The targets (columns) and, per scenario, each target's cells."""
    targets: list[str] = []
    found: dict[str, dict[str, list[str]]] = {}
    for folder in folders:
        for entry in read_index(folder / SUITE_INDEX):
            target, scenario = str(entry.get("target")), str(entry.get("scenario"))
            if target not in targets:
                targets.append(target)
            if "refused" in entry:
                text = f"refused: {entry['refused']}"
            else:
                result = _result(Path(str(entry.get("folder"))))
                seed = "" if result is None else f"seed {result.get('seed')}: "
                text = seed + describe(result)
            found.setdefault(scenario, {}).setdefault(target, []).append(text)
    return targets, found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.backends.ssh.suite_table")
    parser.add_argument("folders", nargs="+", type=Path, help="--lab-runs-dir of a suite")
    parser.add_argument("--hosts", default="", help="what the hosts were (said in the header)")
    args = parser.parse_args(argv)
    missing = [f for f in args.folders if not (f / SUITE_INDEX).is_file()]
    if missing:
        print(f"suite_table: error: {missing[0]}: no {SUITE_INDEX}", file=sys.stderr)
        return 2
    targets, found = rows(args.folders)
    order = {name: i for i, name in enumerate(SCENARIOS)}
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.node()}, {os.cpu_count()} cores, Linux {platform.release()}"
    print("# The scenario suite on hosts (`--backend ssh`)\n")
    print(f"Generated {stamp} on {machine} (shared with other work) by")
    print("`python -m lab.backends.ssh.suite_table " + " ".join(map(str, args.folders)) + "`")
    if args.hosts:
        print(f"from runs on {args.hosts}.")
    print()
    print("| scenario | " + " | ".join(targets) + " |")
    print("|---" * (len(targets) + 1) + "|")
    for scenario in sorted(found, key=lambda s: (order.get(s, len(order)), s)):
        cells = ["<br>".join(found[scenario].get(t, ["—"])).replace("|", "\\|") for t in targets]
        print(f"| `{scenario}` | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
