"""What the `lab` command's parts share: default folders, a progress printer, the table of
commands each part registers."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["DEFAULT_RUNS_DIR", "DEFAULT_STATE_DIR", "Command", "Commands", "say"]

DEFAULT_RUNS_DIR = Path("runs")
DEFAULT_STATE_DIR = Path(".lab")

Command = Callable[[argparse.Namespace], int]
Commands = dict[str, Command]


def say(text: str) -> None:
    """One progress line on stderr."""
    print(text, file=sys.stderr, flush=True)
