"""Targets and their versions as the suite tables write them (lab.reporting.suite_table):
a target's title with its version (`Broker-J 9.1.0`), a column's heading, versions in
order, and the section that lists the scenarios whose verdicts differ between versions
of one target (an upgrade's change in HA behaviour)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from scenarios.catalog import SCENARIOS

__all__ = [
    "BACKEND_NAMES",
    "TARGET_NAMES",
    "VersionedRun",
    "column",
    "target_title",
    "version_changes",
    "version_key",
]

TARGET_NAMES = {"broker_ref": "broker_ref", "qpid-broker-j": "Broker-J", "artemis": "Artemis"}
BACKEND_NAMES = {"process": "local processes", "docker": "containers"}


class VersionedRun(Protocol):
    """A table's cell as this module reads it: one run (or refusal) of a scenario on a
    target at a version, on a backend, with its verdict (None: refused)."""

    @property
    def scenario(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def version(self) -> str | None: ...
    @property
    def verdict(self) -> str | None: ...


def target_title(target: str, version: str | None) -> str:
    """`Broker-J 9.1.0`: a target's name as the tables write it, with its version."""
    return TARGET_NAMES.get(target, target) + (f" {version}" if version else "")


def column(
    target: str, version: str | None, backend: str, settings: tuple[tuple[str, str], ...] = ()
) -> str:
    """`Artemis 2.40.0, local processes`, with the target settings the runs were given
    (`, activation=quorum-voting`) when they are not the target's defaults."""
    given = "".join(f", {k}={v}" for k, v in settings)
    return f"{target_title(target, version)}, {BACKEND_NAMES.get(backend, backend)}{given}"


def version_key(version: str | None) -> tuple[tuple[int, int | str], ...]:
    parts = re.split(r"[.-]", version or "")
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts)


def version_changes(cells: Sequence[VersionedRun]) -> list[str]:
    """A section listing the scenarios whose verdicts differ between versions of a target on
    one backend (none when the cells hold one version each)."""
    verdicts: dict[tuple[str, str, str], dict[str | None, set[str]]] = {}
    for c in cells:
        key = (c.target, c.backend, c.scenario)
        verdicts.setdefault(key, {}).setdefault(c.version, set()).add(c.verdict or "refused")
    changed = []
    for (target, backend, scenario), by_version in verdicts.items():
        if len(by_version) > 1 and len({frozenset(v) for v in by_version.values()}) > 1:
            ordered = sorted(by_version, key=version_key)
            said = "; ".join(f"{v or '?'}: {', '.join(sorted(by_version[v]))}" for v in ordered)
            changed.append(f"- `{scenario}` ({column(target, None, backend)}): {said}")
    versions = {(c.target, c.backend, c.version) for c in cells}
    if len(versions) == len({(t, b) for t, b, _ in versions}):
        return []
    head = ["## Between versions", ""]
    if not changed:
        return [*head, "Every scenario has the same verdicts at every version.", ""]
    order = {name: i for i, name in enumerate(SCENARIOS)}
    changed.sort(key=lambda line: order.get(line.split("`")[1], len(order)))
    return [*head, "The scenarios whose verdicts differ between versions:", "", *changed, ""]
