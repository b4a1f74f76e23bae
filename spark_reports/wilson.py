"""The Wilson score interval for a proportion: how sure a held rate is, given its run count.

    wilson_interval(held, runs)   → (low, high) in 0…1, or None without a run

For `x` successes in `n` trials, p̂ = x / n and z the normal quantile (1.96 for 95 %):

    centre = (p̂ + z²/2n) / (1 + z²/n)
    half   = z / (1 + z²/n) · √(p̂(1 − p̂)/n + z²/4n²)

Unlike p̂ ± z·√(p̂(1 − p̂)/n) it stays inside 0…1 and is not zero-width at 0 % or 100 %: 20
runs that all held give 83.9–100 %, not 100–100 %.
"""

from __future__ import annotations

import math

__all__ = ["Z_95", "wilson_interval"]

Z_95 = 1.959963984540054
"""The standard normal quantile at 97.5 %: a two-sided 95 % interval."""


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of `successes` out of `trials`; None when `trials` is 0.

    Raises ValueError for counts that cannot be (negative, or more successes than trials).
    """
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"{successes} successes out of {trials} trials")
    if trials == 0:
        return None
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    return max(0.0, centre - half), min(1.0, centre + half)
