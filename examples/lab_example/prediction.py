"""An expectation of the user's own, beside the lab's: how soon clients were served again.

A prediction's `expect` takes any value with `unmet(facts) -> str | None`: None when the
run shows it, else the reason, naming what was seen. `facts` (a `RunFacts`) holds what the
run showed: the faults with their times, roles, log lines, the checker's result and the
run's figures (`facts.metrics`).
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.api import RunFacts


@dataclass(frozen=True)
class FailedOverWithin:
    """After fault `fault` began, a producer was acknowledged again within `seconds`
    (the run's `failover_s` figure: by whichever node served first, the node the fault took
    out counting once it was back)."""

    fault: str
    seconds: float

    def unmet(self, facts: RunFacts) -> str | None:
        order = list(facts.faults)
        if self.fault not in order:
            return f"fault {self.fault} never happened"
        taken = facts.metrics.failover_s[order.index(self.fault)]
        if taken is None:
            return f"no acknowledged send after {self.fault} began"
        if taken > self.seconds:
            late = f"{taken:.2f} s after {self.fault}, over {self.seconds:g} s"
            return f"clients were served again {late}"
        return None
