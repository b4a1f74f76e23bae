"""The `lab` command (a composition root, beside the pytest plugin)."""

from lab.cli.main import main

__all__ = ["main"]
