"""The `lab` command: run, replay, list, check, campaign, failures, nightly, shrink, up, down,
ha, images, report, bench, allure, doctor, tables.

Exit status: 0 success (a run's prediction held, a history valid), 1 a prediction
broken or a history invalid, 3 a history whose validity is unknown, 4 a replay whose
original violation did not come back (did not reproduce), 5 a prediction broken as a
deviation the target declares (deviation reproduced), 2 bad usage or input that cannot
be read — always with a one-line message on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from lab import __version__
from lab.cli import campaigns, clusters, doctor, failures, ha, nightly, reports, runs, tables
from lab.cli.common import Commands
from lab.ground.errors import LabError

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"lab: error: {message} (see `lab {self._sub_name()}--help`)\n")

    def _sub_name(self) -> str:
        parts = self.prog.split()[1:]
        return " ".join(parts) + " " if parts else ""


def _build_parser() -> tuple[argparse.ArgumentParser, Commands]:
    parser = _Parser(prog="lab", description="A chaos lab for highly available message brokers.")
    parser.add_argument("--version", action="version", version=f"lab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    commands: Commands = {}
    for part in (runs, campaigns, failures, nightly, clusters, ha, reports, doctor, tables):
        commands.update(part.register(sub))
    return parser, commands


def main(argv: Sequence[str] | None = None) -> int:
    parser, commands = _build_parser()
    args = parser.parse_args(argv)
    from lab.cli.common import DEFAULT_STATE_DIR
    from lab.cli.orphans import clear_orphans

    # What runs killed with SIGKILL left behind; what cannot be cleared goes to a log.
    cleared = clear_orphans(DEFAULT_STATE_DIR / "orphans.log")
    if sys.stderr.isatty():  # said to a person; never mixed into a script's one-line error
        for what in cleared:
            print(f"lab: cleared {what}", file=sys.stderr)
    try:
        return commands[args.command](args)
    except LabError as exc:
        print(f"lab: error: {exc}", file=sys.stderr)
        for note in getattr(exc, "__notes__", ()):
            print(f"lab: {note}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lab: interrupted; every fault was healed and every process stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
