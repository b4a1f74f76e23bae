"""Every scenario the lab can run, by name."""

from __future__ import annotations

from collections.abc import Mapping

from lab.errors import UsageError
from scenarios.base import Scenario
from scenarios.single_node import SINGLE_NODE_CRASH

__all__ = ["SCENARIOS", "scenario_named"]

SCENARIOS: Mapping[str, Scenario] = {s.name: s for s in (SINGLE_NODE_CRASH,)}


def scenario_named(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        known = ", ".join(sorted(SCENARIOS))
        raise UsageError(f"unknown scenario {name!r} (known: {known}; see `lab list`)") from None
