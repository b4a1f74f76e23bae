"""The bandit of a guided campaign (lab.campaign.bandit): Thompson sampling that learns which
arm pays, forgets what paid long ago, plays only what it is allowed, and — seeded — chooses
the same again."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from lab.campaign.bandit import DISCOUNT, Bandit

ARMS = ("fresh", "shift", "stack")


def _play(rng: random.Random, pays: dict[str, float], rounds: int) -> Counter[str]:
    bandit = Bandit(ARMS)
    played: Counter[str] = Counter()
    for _ in range(rounds):
        arm = bandit.choose(rng, ARMS)
        played[arm] += 1
        bandit.reward(arm, rng.random() < pays[arm])
    return played


def test_the_arm_that_pays_gets_the_budget() -> None:
    played = _play(random.Random(1), {"fresh": 0.1, "shift": 0.8, "stack": 0.1}, 300)
    assert played["shift"] > 200 and played["fresh"] < 50 and played["stack"] < 50


def test_an_arm_that_stopped_paying_gives_the_budget_back() -> None:
    rng = random.Random(2)
    bandit = Bandit(ARMS)
    for _ in range(60):  # early on, everything fresh paid
        bandit.reward("fresh", True)
    for _ in range(150):  # now only stacking does
        arm = bandit.choose(rng, ARMS)
        bandit.reward(arm, arm == "stack")
    late = Counter(bandit.choose(rng, ARMS) for _ in range(100))
    assert late["stack"] > 70
    assert bandit.stats["fresh"].pulls > 60 and bandit.stats["fresh"].wins == 60


def test_beliefs_forget_at_the_discount() -> None:
    bandit = Bandit(ARMS)
    bandit.reward("shift", True)
    bandit.reward("stack", False)
    shift, stack = bandit.stats["shift"], bandit.stats["stack"]
    assert (shift.pulls, shift.wins) == (1, 1)
    assert shift.alpha == pytest.approx(1 + DISCOUNT) and shift.beta == 1.0
    assert (stack.alpha, stack.beta) == (1.0, 2.0)


def test_only_allowed_arms_are_played_and_the_same_seed_chooses_the_same() -> None:
    bandit = Bandit(ARMS)
    rng = random.Random(3)
    assert {bandit.choose(rng, ["fresh"]) for _ in range(20)} == {"fresh"}
    with pytest.raises(ValueError, match="no arm"):
        bandit.choose(rng, [])
    pays = {"fresh": 0.3, "shift": 0.5, "stack": 0.2}
    assert _play(random.Random(9), pays, 80) == _play(random.Random(9), pays, 80)
