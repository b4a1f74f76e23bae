"""`lab failures list|show|forget|import|reproduce`: the failure database, and a nightly's
failures brought to this machine and run here.

    lab failures import ARTIFACT… [--runs DIR…]   a downloaded `failures` artifact (folder or
                                                 zip) joined into the database
    lab failures reproduce ID [--times N]        the failing spec run here: `reproduced k/N`
                                                 (exit 1) or `did not reproduce` (exit 4)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from lab.cli.common import DEFAULT_RUNS_DIR, DEFAULT_STATE_DIR, Commands
from lab.ground.errors import UsageError

if TYPE_CHECKING:
    from lab.campaign.failures import FailureDB

__all__ = ["DEFAULT_FAILURES", "register"]

DEFAULT_FAILURES = DEFAULT_STATE_DIR / "failures"


def _db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--failures-dir",
        type=Path,
        default=DEFAULT_FAILURES,
        metavar="DIR",
        help="the failure database (default .lab/failures)",
    )


def _needs_id(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("failure", nargs="?", help="a failure's id (or a prefix of it)")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> Commands:
    failures = sub.add_parser(
        "failures",
        help="the failure database: list, show, forget; import a nightly's, reproduce one here",
    )
    actions = failures.add_subparsers(dest="action", required=True, metavar="ACTION")
    listed = actions.add_parser("list", help="every recorded failure, one line each")
    shown = actions.add_parser("show", help="a failure's record, as JSON")
    forget = actions.add_parser("forget", help="remove a failure from the database")
    imported = actions.add_parser(
        "import",
        help="join failure records made elsewhere (a nightly's downloaded `failures` "
        "artifact, a folder or a zip) into the database; nothing newer is overwritten",
    )
    imported.add_argument(
        "artifacts",
        nargs="+",
        type=Path,
        metavar="ARTIFACT",
        help="a downloaded `failures` artifact: a folder of records, or its zip",
    )
    imported.add_argument(
        "--runs",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a folder holding the failures' run folders (a downloaded campaign artifact): "
        "records point there instead of the CI machine's paths (repeatable)",
    )
    again = actions.add_parser(
        "reproduce",
        help="run a failure's spec here and compare its verdict with the recorded one: "
        "`reproduced k/N` (exit 1) or `did not reproduce` (exit 4)",
    )
    again.add_argument(
        "--times", type=int, default=1, metavar="N", help="run it N times (default 1)"
    )
    again.add_argument(
        "--runs-dir",
        type=Path,
        default=DEFAULT_RUNS_DIR,
        metavar="DIR",
        help="where its run folders go (default runs/)",
    )
    again.add_argument(
        "--hosts", type=Path, metavar="FILE", help="a failure on hosts: the hosts file here"
    )
    for parser in (shown, forget, again):
        _needs_id(parser)
    for parser in (listed, shown, forget, imported, again):
        _db_option(parser)
    return {"failures": _cmd_failures}


def _cmd_failures(args: argparse.Namespace) -> int:
    from lab.campaign.failures import FailureDB

    db = FailureDB(args.failures_dir)
    if args.action == "list":
        return _list(db)
    if args.action == "import":
        return _import(db, args.artifacts, args.runs)
    if args.failure is None:
        raise UsageError(f"failures {args.action} needs a failure's id (see `lab failures list`)")
    if args.action == "reproduce":
        return _reproduce(db, args)
    failure = db.get(args.failure)
    if args.action == "show":
        print(json.dumps(failure.to_json(), indent=2))
    else:
        db.forget(failure)
        print(f"forgot {failure.scenario}-{failure.id}")
    return 0


def _list(db: FailureDB) -> int:
    found = list(db)
    if not found:
        print(f"no failures recorded in {db.root}")
    for f in found:
        kinds = ", ".join(f.violations)
        print(
            f"{f.id}  {f.status:<8}  {f.scenario} · {f.target} · {f.backend} · {f.mode}  "
            f"seed={f.seed}  {kinds}  ({len(f.outcomes)} replays)"
        )
    return 0


def _import(db: FailureDB, artifacts: list[Path], runs: list[Path]) -> int:
    """Every record read and checked first; then each joined in, one line each."""
    from lab.campaign.failure_import import LocalRuns, merge_records, read_records
    from lab.ground.invocation import shown_command

    records = read_records(artifacts)
    local = LocalRuns(runs)
    list(db)  # a database that is not one is refused before anything is written
    changes = merge_records(db, records, local)
    for change in changes:
        f = change.failure
        where = f.folder or "no run folder here"
        print(
            f"{change.change:<9}  {f.id}  {f.status:<8}  {f.scenario} · {f.target} · "
            f"{f.backend} · {f.mode}  seed={f.seed}  {', '.join(f.violations)}  ({where})"
        )
    counts = {kind: sum(c.change == kind for c in changes) for kind in ("new", "joined")}
    print(
        f"imported {len(changes)} record(s) into {db.root}: {counts['new']} new, "
        f"{counts['joined']} joined, {len(changes) - sum(counts.values())} unchanged"
    )
    if changes:
        lab = shown_command("lab")
        dir_option = "" if db.root == DEFAULT_FAILURES else f" --failures-dir {db.root}"
        print(f"reproduce one here: {lab} failures reproduce ID{dir_option}")
    return 0


def _reproduce(db: FailureDB, args: argparse.Namespace) -> int:
    """The recorded spec run here, `--times` times; exit 1 when the recorded violation came
    back, 4 when it never did."""
    from lab.cli.runs import replay_spec
    from lab.compose import parts_for
    from lab.ground.errors import InputError
    from lab.judge.result import ReplayOf
    from lab.run.incident import load_edited_spec

    if args.times < 1:
        raise UsageError(f"--times {args.times}: run it at least once")
    failure = db.get(args.failure)
    record = db.root / f"{failure.scenario}-{failure.id}.json"
    spec = load_edited_spec(dict(failure.spec), record)
    try:
        parts = parts_for(spec.scenario, spec.backend, spec.target_ref, spec.group.mode, args.hosts)
    except UsageError as exc:
        raise InputError(f"{record}: {exc}") from None
    named = f"failure {failure.id} ({failure.scenario}, seed {failure.seed})"
    unknown = failure.verdict == "unknown"
    original = ReplayOf(named, "unknown" if unknown else "broken", failure.violations)
    return replay_spec(spec, parts, args.runs_dir, original, args.times, f"failure {failure.id}")
