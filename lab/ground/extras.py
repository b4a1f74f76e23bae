"""The lab's optional package sets (pyproject.toml's extras): what each enables, whether this
environment has it, and the one-line refusal when a command needs one that is missing.

    reports   PySpark, DuckDB, matplotlib   `lab report`, a campaign's report, timeline charts
    docker    the Docker SDK, testcontainers   `--backend docker`, `lab images`
    hosts     AsyncSSH                      `--backend ssh`

The first set-up (`scripts/bootstrap.sh`) installs neither, so a first run waits for nothing it
does not use; `scripts/bootstrap.sh --reports`, `--docker`, `--hosts` or `--tests` add them.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from lab.ground.errors import SetupError

__all__ = ["DOCKER", "EXTRAS", "HOSTS", "REPORTS", "Extra", "require"]


@dataclass(frozen=True)
class Extra:
    """One extra: its name in pyproject.toml, the modules it brings, what they enable."""

    name: str
    modules: tuple[str, ...]
    enables: str

    def missing(self) -> tuple[str, ...]:
        """The extra's modules this environment cannot import (found without importing them)."""
        return tuple(m for m in self.modules if not _findable(m))

    @property
    def installed(self) -> bool:
        return not self.missing()

    @property
    def install_command(self) -> str:
        return (
            f"scripts/bootstrap.sh --{self.name} (or, where the lab was installed with pip, "
            f"pip install 'ha-chaos-lab[{self.name}]')"
        )


REPORTS = Extra(
    "reports",
    ("pyspark", "duckdb", "matplotlib"),
    "Spark reports (`lab report`, campaigns' reports)",
)
DOCKER = Extra("docker", ("docker", "testcontainers"), "the Docker backend (`--backend docker`)")
HOSTS = Extra("hosts", ("asyncssh",), "the hosts backend (`--backend ssh`)")
EXTRAS = (REPORTS, DOCKER, HOSTS)


def _findable(module: str) -> bool:
    """Whether `module` can be found; a finder that refuses it (an environment that made it
    unimportable) or a broken entry in sys.modules counts as not found."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(extra: Extra, needed_by: str) -> None:
    """A SetupError (one line) when `extra` is not installed: `needed_by` says what asked."""
    missing = extra.missing()
    if missing:
        raise SetupError(
            f"{needed_by} needs {', '.join(missing)}, not installed in this environment: "
            f"run {extra.install_command}"
        )
