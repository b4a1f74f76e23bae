"""What a benchmark is: a name, a one-line description and `run(say) -> figure line`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

__all__ = ["Benchmark", "Say"]

Say: TypeAlias = Callable[[str], None]
"""Prints one progress line."""


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: `run(say)` reports progress through `say` and returns the figure line.

    It runs on local processes; one that can also run on another backend has
    `run_on(say, backend)`.
    """

    name: str
    description: str
    run: Callable[[Say], str]
    run_on: Callable[[Say, str], str] | None = None
