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
    """What a run left: read its verdict, checker's result, figures and events from here.

    Attributes:
        folder: the run folder (`.path`, `.spec`, `.result`, `.history`, `.events`,
            `.schedule`: the files of docs/run-folder.md).
        spec: the `RunSpec` that ran.
        judgement: how the lab judged it (its inside: read `verdict`, `check` and
            `metrics` instead).
        reproduce: the command that runs it again.
    """

    folder: RunFolder
    spec: RunSpec
    judgement: Judgement
    reproduce: str

    @property
    def verdict(self) -> Verdict:
        """Did the prediction hold: `held`, `broken` or `unknown`, with the reasons."""
        return self.judgement.verdict

    @property
    def check(self) -> CheckResult:
        """The queue checker's result: acknowledged, received, lost, duplicated …"""
        return self.judgement.check

    @property
    def metrics(self) -> RunMetrics:
        """The run's figures (result.json's `metrics`): acknowledged sends a second, the
        gaps between them, `failover_s` per fault, the masters over time …"""
        return self.judgement.metrics

    @property
    def events(self) -> list[dict[str, Any]]:
        """What else the run observed (events.jsonl: node roles, faults, log codes …)."""
        return read_events(self.folder.events)

    @property
    def summary(self) -> str:
        """The one-line verdict `lab run` prints, with the reasons when it did not hold."""
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
