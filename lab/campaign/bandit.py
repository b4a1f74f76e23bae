"""Which way of making the next run pays: a bandit over the arms of a guided campaign (a
fresh draw, or a mutation operator), rewarded when the run reached a behaviour its cell had
not shown before.

Thompson sampling: each arm's chance of paying is a Beta(1 + wins, 1 + losses) belief; the
arm whose sampled chance is highest is played. The beliefs forget at DISCOUNT a pull, so that
an arm that paid early, while everything was new, does not keep the budget once it stops
paying (new behaviour gets rarer as a campaign goes on). Samples come from the guide's own
`random.Random`, so the same results replay the same choices.

    bandit = Bandit(("fresh", "shift", …))
    arm = bandit.choose(rng, allowed)     allowed: the arms that can act now
    bandit.reward(arm, paid)              after the run: did it reach new behaviour
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["DISCOUNT", "ArmStats", "Bandit"]

DISCOUNT = 0.98


@dataclass(frozen=True)
class ArmStats:
    """One arm's record: pulls and wins in all, and its (discounted) belief."""

    pulls: int = 0
    wins: int = 0
    alpha: float = 1.0
    beta: float = 1.0


class Bandit:
    def __init__(self, arms: Iterable[str]) -> None:
        self.stats: dict[str, ArmStats] = {arm: ArmStats() for arm in arms}

    def choose(self, rng: random.Random, allowed: Iterable[str]) -> str:
        """The arm to play among `allowed` (in the bandit's order; ties to the first)."""
        arms = [arm for arm in self.stats if arm in set(allowed)]
        if not arms:
            raise ValueError("no arm may be played")
        samples = [(rng.betavariate(self.stats[a].alpha, self.stats[a].beta), a) for a in arms]
        best = max(s for s, _ in samples)
        return next(a for s, a in samples if s == best)

    def reward(self, arm: str, paid: bool) -> None:
        for name, s in self.stats.items():
            alpha = 1.0 + (s.alpha - 1.0) * DISCOUNT
            beta = 1.0 + (s.beta - 1.0) * DISCOUNT
            if name == arm:
                alpha, beta = alpha + paid, beta + (not paid)
                s = ArmStats(s.pulls + 1, s.wins + paid, alpha, beta)
            else:
                s = ArmStats(s.pulls, s.wins, alpha, beta)
            self.stats[name] = s
