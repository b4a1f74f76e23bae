"""netem's parameters as a fault gives them, checked and turned into `tc … netem` arguments
(the faults check them before anything starts; the backends that shape an interface use them).
"""

from __future__ import annotations

from collections.abc import Mapping

from lab.ground.errors import UsageError

__all__ = ["NETEM_PARAMS", "netem_args"]

NETEM_PARAMS = ("delay_ms", "jitter_ms", "loss_pct", "duplicate_pct", "reorder_pct", "corrupt_pct")


def _percent(params: Mapping[str, object], name: str) -> float:
    value = float(str(params.get(name, 0)))
    if not 0 <= value <= 100:
        raise UsageError(f"netem {name} {value:g}: a percentage, 0 to 100")
    return value


def netem_args(params: Mapping[str, object]) -> list[str]:
    """netem's arguments for the fault's parameters; a UsageError for nonsense."""
    unknown = sorted(set(params) - set(NETEM_PARAMS))
    if unknown:
        raise UsageError(
            f"netem: unknown parameter {unknown[0]} (known: {', '.join(NETEM_PARAMS)})"
        )
    delay = float(str(params.get("delay_ms", 0)))
    jitter = float(str(params.get("jitter_ms", 0)))
    if not 0 <= delay <= 60_000 or not 0 <= jitter <= 60_000:
        raise UsageError("netem delay_ms and jitter_ms: 0 to 60000")
    if jitter and not delay:
        raise UsageError("netem jitter_ms needs delay_ms")
    loss, dup, reorder, corrupt = (
        _percent(params, n) for n in ("loss_pct", "duplicate_pct", "reorder_pct", "corrupt_pct")
    )
    if loss > 50:
        raise UsageError(f"netem loss_pct {loss:g}: at most 50 (a node that loses all is cut)")
    if reorder and not delay:
        raise UsageError("netem reorder_pct needs delay_ms (netem reorders by sending some early)")
    args: list[str] = []
    if delay:
        args += ["delay", f"{delay:g}ms"] + ([f"{jitter:g}ms"] if jitter else [])
    for name, value in (
        ("loss", loss),
        ("duplicate", dup),
        ("reorder", reorder),
        ("corrupt", corrupt),
    ):
        if value:
            args += [name, f"{value:g}%"]
    if not args:
        raise UsageError("netem needs at least one of " + ", ".join(NETEM_PARAMS))
    return args
