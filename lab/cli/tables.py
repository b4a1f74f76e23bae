"""`lab tables`: results tables as generated pages (docs/observed/), made from files.

lab tables suite RUNS_DIR… --out PAGE [--baseline RATES] [--target NAME[@VERSION]] [--rejudge]
    scenario-suite sessions → a verdict page with the rates over seeds (only one target's
    runs, or one version's, with --target); beside PAGE its rates as JSON (PAGE with .json),
    which the next page made at PAGE compares with (or --baseline RATES, another page's
    JSON): a page made again from the same sessions keeps the comparison it had
lab tables seen RUNS_DIR… [--target NAME[@VERSION]] [--note TEXT] [--rejudge]
    scenario-suite sessions → for each declared deviation of the targets they ran, the
    `seen` entry they give it (reproduced K of N runs, per backend), as TOML to add to the
    declaration in the target's deviations file
--rejudge: every run judged again by this lab from its history and events
    (lab.reporting.suite_rejudge), its folder untouched
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.cli.common import Commands
from lab.ground.errors import UsageError

if TYPE_CHECKING:
    from lab.reporting.suite_cells import Read

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
        "--baseline",
        type=Path,
        metavar="RATES",
        help="compare with these rates (a page's .json; default: the one beside --out)",
    )
    suite.add_argument(
        "--target",
        metavar="NAME[@VERSION]",
        help="only this target's runs (or one version's: a session of several)",
    )
    seen = kinds.add_parser(
        "seen",
        help="the `seen` entries sessions give each declared deviation (TOML to add)",
    )
    seen.add_argument("folders", nargs="+", type=Path, metavar="RUNS_DIR")
    seen.add_argument("--target", metavar="NAME[@VERSION]", help="only this target's runs")
    seen.add_argument("--note", default="", help="said in every entry after its seeds")
    for parser in (suite, seen):
        parser.add_argument(
            "--rejudge",
            action="store_true",
            help="judge every run again with this lab, from its history and events",
        )
    return {"tables": _cmd_tables}


def _cmd_tables(args: argparse.Namespace) -> int:
    if args.table == "seen":
        return _cmd_seen(args)
    from lab.ground.files import write_text
    from lab.reporting.suite_cells import check_folders, collect, only
    from lab.reporting.suite_declared import declared_deviations
    from lab.reporting.suite_rates import Baseline, tally
    from lab.reporting.suite_table import page

    if not args.out.parent.is_dir():
        raise UsageError(f"--out {args.out}: no folder {args.out.parent}")
    if args.baseline is not None and not args.baseline.is_file():
        raise UsageError(f"--baseline {args.baseline}: no such file")
    check_folders(args.folders)
    rates_file = args.out.with_suffix(".json")
    try:
        published, compared = Baseline.read(args.baseline or rates_file)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    cells = only(collect(args.folders, _reader(args)), args.target)
    if not cells:
        raise UsageError(f"--target {args.target}: no runs of it in these folders")
    made = dt.datetime.now(dt.UTC)
    folders = tuple(str(f) for f in args.folders)
    # The same sessions again: keep what they were compared with, not themselves.
    before = compared if published is not None and published.sessions == folders else published
    if args.baseline is not None:
        before = published
    shown = " ".join(str(f) for f in args.folders)
    command = f"lab tables suite {shown} --out {args.out}"
    command += f" --target {args.target}" * (args.target is not None)
    command += " --rejudge" * args.rejudge
    text = page(
        args.folders, cells, command, made, declared_deviations, before, args.target, args.rejudge
    )
    records = (c.record() for c in cells if c.verdict is not None)
    rates = Baseline(made, tuple(tally(records)), folders)
    write_text(args.out, text)
    rates.write(rates_file, before)
    print(args.out, file=sys.stdout)
    return 0


def _cmd_seen(args: argparse.Namespace) -> int:
    from lab.reporting.suite_cells import check_folders, collect, only
    from lab.reporting.suite_declared import declared_deviations
    from lab.reporting.suite_seen import seen_entries
    from lab.reporting.suite_sessions import sessions

    check_folders(args.folders)
    cells = only(collect(args.folders, _reader(args)), args.target)
    if not cells:
        raise UsageError(f"--target {args.target}: no runs of it in these folders")
    started = [s.first for s in sessions(args.folders, args.target) if s.first is not None]
    day = min(started).date() if started else dt.datetime.now(dt.UTC).date()
    entries = seen_entries(cells, declared_deviations, day)
    for e in entries:
        given = "".join(f", {k}={v}" for k, v in e.settings)
        where = f"{e.target}, {e.scenario} on {e.backend}{given}"
        print(f"# {e.deviation} ({where}): reproduced in {e.times} of {e.runs} runs")
        print(f"    {e.toml(args.note)},")
    said = f"{len(entries)} declared deviations counted in {len(args.folders)} sessions"
    print(said + " (add each entry to its declaration's `seen` list)" * bool(entries))
    return 0


def _reader(args: argparse.Namespace) -> Read | None:
    """How each run's result is read: as recorded, or (--rejudge) judged again, with a
    count on stderr as it goes."""
    if not args.rejudge:
        return None
    from lab.reporting.suite_cells import read_result
    from lab.reporting.suite_rejudge import rejudged

    done = [0]

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    def read(folder: Path) -> dict[str, Any] | None:
        done[0] += 1
        if done[0] % 10 == 0:
            say(f"lab: judged {done[0]} runs again")
        return rejudged(folder, read_result(folder), say)

    return read
