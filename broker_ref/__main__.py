"""`python -m broker_ref --config CONFIG.json`: run one node until SIGTERM or SIGINT.

stdout carries the operational log; anything else goes to stderr. Exit status:
0 after a clean shutdown, 2 for a bad config, a taken port or a locked data
directory (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from broker_ref.config import load_config
from broker_ref.errors import BrokerError
from broker_ref.node import Node
from broker_ref.oplog import OperationalLog

EXIT_OK = 0
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"broker_ref: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m broker_ref", description="Run one broker_ref node.")
    parser.add_argument("--config", required=True, type=Path, help="the node's JSON config")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
        node = Node(config, OperationalLog(config.name, sys.stdout))
        node.open()
        node.serve()
    except BrokerError as exc:
        print(f"broker_ref: {exc}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
