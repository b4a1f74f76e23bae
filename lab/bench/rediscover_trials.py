"""rediscover's values: what a user asked for, and one trial's outcome."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lab.bench.detection_request import DEFAULT_SEED
from lab.bench.rediscover_match import Match

__all__ = ["RediscoverRequest", "Trial"]


@dataclass(frozen=True)
class RediscoverRequest:
    target: str
    settings: tuple[tuple[str, str], ...]
    budget_s: float = 600.0
    trials: int = 3
    generators: tuple[str, ...] = ("random", "coverage")
    control: bool = False
    seed: int = DEFAULT_SEED
    shrink_budget_s: float = 300.0
    page: Path | None = None
    # The control's settings: the campaigns' own with these changed (none: the target's
    # defaults, every setting left out).
    control_settings: tuple[tuple[str, str], ...] | None = None

    @property
    def given(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.settings) or "its defaults"

    @property
    def control_given(self) -> tuple[tuple[str, str], ...]:
        if self.control_settings is None:
            return ()
        return tuple(sorted({**dict(self.settings), **dict(self.control_settings)}.items()))

    @property
    def control_name(self) -> str:
        given = " ".join(f"{k}={v}" for k, v in self.control_given)
        return given or f"{self.target}'s defaults"


@dataclass(frozen=True)
class Trial:
    generator: str
    trial: int
    seed: int
    control: bool
    runs: int  # runs completed when it ended
    found: bool
    minutes: float | None = None  # from the campaign's start to the end of the losing run
    runs_to_loss: int | None = None
    kinds: tuple[str, ...] = ()
    folder: Path | None = None
    match: Match | None = None
    shrunk: tuple[str, ...] | None = None  # the fault windows kept by `lab shrink`
    shrink_outcome: str = ""
