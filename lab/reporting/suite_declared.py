"""The deviations a target declares for the runs of a suite session, as the verdict tables
(lab.reporting.suite_table) and the `seen` entries (lab.reporting.suite_seen) count them.

    declared_deviations(target, scenario, backend, mode, settings) → [Deviation]
    Declared                        the type of such a lookup (no_declarations: none)

Which declarations apply to a run depends on its target, version, scenario, backend, mode
and the target settings it was given over the target's defaults, exactly as when the run
was judged (lab.judge.result).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

from lab.ground.errors import UsageError
from lab.judge.deviations import Declarations, Deviation, load_declarations

__all__ = ["Declared", "declared_deviations", "no_declarations"]

# A target's (`NAME[@VERSION]`) declared deviations for a scenario, backend, mode and the
# target settings a run was given.
Declared = Callable[[str, str, str, str, Mapping[str, str]], Sequence[Deviation]]


@functools.cache
def _declarations(target: str) -> tuple[Declarations, dict[str, str]] | None:
    """The target's declarations and its settings' defaults (None: it declares none)."""
    from lab.targets.catalog import make_target
    from lab.targets.protocol import DeclaresDeviations

    try:
        made = make_target(target)
    except UsageError:  # a target this lab does not know (a folder from elsewhere)
        return None
    if not isinstance(made, DeclaresDeviations):
        return None
    defaults = dict(getattr(made, "setting_defaults", {}))
    return load_declarations(made.deviations_file), defaults


def declared_deviations(
    target: str,
    scenario: str,
    backend: str,
    mode: str,
    settings: Mapping[str, str] | None = None,
) -> list[Deviation]:
    """The deviations `target` (`NAME[@VERSION]`) declares for a run of `scenario` on
    `backend` in `mode` given `settings` over the target's defaults (at the version named,
    else the target's own)."""
    name, _, version = target.partition("@")
    found = _declarations(name)
    if found is None:
        return []
    declarations, defaults = found
    given = {**defaults, **(settings or {})}
    return list(declarations.for_run(scenario, backend, mode, given, version=version or None))


def no_declarations(
    target: str, scenario: str, backend: str, mode: str, settings: Mapping[str, str]
) -> list[Deviation]:
    return []
