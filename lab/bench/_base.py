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

    It runs broker_ref on local processes; one that can also run on another backend
    has `run_on(say, backend)`; one that can measure another target has
    `run_against(say, target)`, which measures broker_ref in the same run and prints
    both figures, so the two are compared on one machine at one time; one that can
    measure broker_ref in another HA mode has `run_mode(say, mode)` (`lab bench NAME
    --mode active-passive`), and one that measures another target beside it in that mode
    `run_mode_against(say, mode, target)` (`--mode active-passive --target artemis`). One
    whose length a user chooses has `size_option` (`runs`
    or `minutes`: `lab bench NAME --runs N`) and `run_sized(say, backend, size)`.
    """

    name: str
    description: str
    run: Callable[[Say], str]
    run_on: Callable[[Say, str], str] | None = None
    run_against: Callable[[Say, str], str] | None = None
    run_mode: Callable[[Say, str], str] | None = None
    run_mode_against: Callable[[Say, str, str], str] | None = None
    run_sized: Callable[[Say, str, int], str] | None = None
    size_option: str | None = None
    # The optional package sets it needs beyond the lab's own (lab.ground.extras names).
    needs: tuple[str, ...] = ()
