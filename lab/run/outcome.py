"""What a run left for its caller: the folder, the spec that ran, the judgement, and the
command that runs it again; the verdict, the checker's result, the figures and the events
read from them (a test's assertions: lab.api)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.ground.spec import RunSpec
from lab.judge.checker import CheckResult
from lab.judge.metrics import RunMetrics, read_events
from lab.judge.prediction import Verdict
from lab.judge.result import Judgement
from lab.run.folder import RunFolder

__all__ = ["RunOutcome"]


@dataclass(frozen=True)
class RunOutcome:
    folder: RunFolder
    spec: RunSpec
    judgement: Judgement
    reproduce: str

    @property
    def verdict(self) -> Verdict:
        return self.judgement.verdict

    @property
    def check(self) -> CheckResult:
        return self.judgement.check

    @property
    def metrics(self) -> RunMetrics:
        return self.judgement.metrics

    @property
    def events(self) -> list[dict[str, Any]]:
        """What else the run observed (events.jsonl: node roles, faults, log codes …)."""
        return read_events(self.folder.events)

    @property
    def summary(self) -> str:
        c = self.check
        line = (
            f"{self.spec.scenario} seed={self.spec.seed}: prediction {self.verdict.outcome} — "
            f"acknowledged {c.acknowledged}, received {c.received}, lost {c.lost.count}, "
            f"duplicated {c.duplicated.count}, unexpected {c.unexpected.count}, "
            f"resurrected {c.resurrected.count}"
        )
        if self.verdict.reasons:
            line += " (" + "; ".join(self.verdict.reasons) + ")"
        return line
