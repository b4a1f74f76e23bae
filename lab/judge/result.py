"""A run's judgement and result.json, its one writer.

    judge_run(history, events, prediction, target) → Judgement(check, metrics, verdict)
    RunResult.judged(spec, judgement, reproduce).write(path)    a run that ended
    RunResult.failed(spec, error, reproduce).write(path)        a run that did not

result.json holds: `v`, scenario, seed, target, backend, verdict (held / broken / unknown),
reasons, the prediction's text, the checker's result (formats.md section 4), the metrics,
the command that reproduces the run, and `error` when the run did not finish.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.ground.files import write_json
from lab.ground.nodes import TargetTraits
from lab.ground.spec import RunSpec
from lab.judge.checker import CheckResult, check_path
from lab.judge.metrics import RunMetrics, read_events, read_operations, run_metrics
from lab.judge.prediction import Outcome, Prediction, Verdict

__all__ = ["RESULT_VERSION", "Judgement", "RunResult", "judge_run"]

RESULT_VERSION = 1


@dataclass(frozen=True)
class Judgement:
    """What the judge made of a run: the checker's sets, the figures, the verdict."""

    prediction: Prediction
    check: CheckResult
    metrics: RunMetrics
    verdict: Verdict


def judge_run(
    history: Path, events: Path, prediction: Prediction, target: TargetTraits
) -> Judgement:
    """Check the history, measure the run and judge it against the prediction."""
    check = check_path(history)
    observed = read_events(events)
    metrics = run_metrics(read_operations(history), observed)
    return Judgement(prediction, check, metrics, prediction.judge(check, observed, metrics, target))


@dataclass(frozen=True)
class RunResult:
    """Everything result.json says; `error` is set when the run did not finish."""

    scenario: str
    seed: int
    target: str
    backend: str
    verdict: Outcome
    reasons: tuple[str, ...]
    reproduce: str
    prediction: str | None = None
    check: CheckResult | None = None
    metrics: RunMetrics | None = None
    error: str | None = None

    @staticmethod
    def judged(spec: RunSpec, judgement: Judgement, reproduce: str) -> RunResult:
        return RunResult(
            scenario=spec.scenario,
            seed=spec.seed,
            target=spec.target,
            backend=spec.backend,
            verdict=judgement.verdict.outcome,
            reasons=judgement.verdict.reasons,
            reproduce=reproduce,
            prediction=judgement.prediction.text,
            check=judgement.check,
            metrics=judgement.metrics,
        )

    @staticmethod
    def failed(spec: RunSpec, error: BaseException, reproduce: str) -> RunResult:
        """A run that ended with an error before it could be judged: verdict unknown."""
        return RunResult(
            scenario=spec.scenario,
            seed=spec.seed,
            target=spec.target,
            backend=spec.backend,
            verdict="unknown",
            reasons=(),
            reproduce=reproduce,
            error=f"{type(error).__name__}: {error}",
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "v": RESULT_VERSION,
            "scenario": self.scenario,
            "seed": self.seed,
            "target": self.target,
            "backend": self.backend,
            "verdict": self.verdict,
            "reasons": list(self.reasons),
        }
        if self.prediction is not None:
            out["prediction"] = self.prediction
        if self.check is not None:
            out["check"] = self.check.to_json()
        if self.metrics is not None:
            out["metrics"] = self.metrics.to_json()
        if self.error is not None:
            out["error"] = self.error
        out["reproduce"] = self.reproduce
        return out

    def write(self, path: Path) -> None:
        """result.json, written whole or not at all."""
        write_json(path, self.to_json())
