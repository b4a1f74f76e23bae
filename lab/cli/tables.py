"""`lab tables`: results tables as generated pages (docs/observed/), made from files.

lab tables suite RUNS_DIR… --out PAGE [--target NAME[@VERSION]]
                                        scenario-suite sessions → a verdict table
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from lab.cli.common import Commands
from lab.ground.errors import UsageError

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> Commands:
    """Add this part's subcommands to `sub`; return their handlers by name."""
    tables = sub.add_parser("tables", help="results tables as generated pages (docs/observed/)")
    kinds = tables.add_subparsers(dest="table", required=True)
    suite = kinds.add_parser(
        "suite", help="a verdict table from scenario-suite sessions (--lab-runs-dir folders)"
    )
    suite.add_argument("folders", nargs="+", type=Path, metavar="RUNS_DIR")
    suite.add_argument("--out", type=Path, required=True, help="the page to write (Markdown)")
    suite.add_argument(
        "--target",
        metavar="NAME[@VERSION]",
        help="only this target's runs (or one version's: a session of several)",
    )
    return {"tables": _cmd_tables}


def _cmd_tables(args: argparse.Namespace) -> int:
    from lab.ground.files import write_text
    from lab.reporting.suite_table import check_folders, collect, only, page

    if not args.out.parent.is_dir():
        raise UsageError(f"--out {args.out}: no folder {args.out.parent}")
    check_folders(args.folders)
    cells = only(collect(args.folders), args.target)
    if not cells:
        raise UsageError(f"--target {args.target}: no runs of it in these folders")
    shown = " ".join(str(f) for f in args.folders)
    command = f"lab tables suite {shown} --out {args.out}"
    command += f" --target {args.target}" * (args.target is not None)
    text = page(args.folders, cells, command, dt.datetime.now(dt.UTC))
    write_text(args.out, text)
    print(args.out, file=sys.stdout)
    return 0
