"""A run's judgement and result.json, its one writer.

    judge_run(history, events, prediction, target, timings) → Judgement(check, metrics, verdict)
    RunResult.judged(spec, judgement, reproduce).write(path)    a run that ended
    RunResult.failed(spec, error, reproduce).write(path)        a run that did not

result.json holds: `v`, scenario, seed, target (and `target_version`, the version it ran,
for a target that has versions), backend, mode, verdict (held / broken /
unknown / deviation / interrupted), reasons and the kind of each violation (`violations`:
`lost`, `two-masters` …; `error` for a run that did not finish), the prediction's text,
the checker's result (docs/run-folder.md), the metrics, the command that reproduces the
run, `error` when the run did not finish, and `replay` when the run repeats another (`of`,
the original verdict and violation kinds, `reproduced`, and `outcome`: reproduced / did
not reproduce), and `deviation` when the target declares a known deviation for the run's
scenario (lab.judge.deviations): `outcome` reproduced (the verdict is then `deviation`,
and `id` names the declaration), not seen (the run held: `warning`), or unmatched (the run
broke otherwise: `mismatches`), with the declared ids and their file (`source`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lab.ground.files import write_json
from lab.ground.nodes import TargetTraits
from lab.ground.spec import RunSpec
from lab.judge.bounds import Timings
from lab.judge.checker import CheckResult, check_path
from lab.judge.deviations import (
    Declarations,
    DeviationOutcome,
    assess,
    load_declarations,
)
from lab.judge.metrics import RunMetrics, read_events, read_operations, run_metrics
from lab.judge.prediction import Outcome, Prediction, Verdict
from lab.judge.run_observation import Observation

__all__ = [
    "RESULT_VERSION",
    "Interruption",
    "Judgement",
    "ReplayOf",
    "RunResult",
    "RunVerdict",
    "judge_run",
]

# 2: mode, violations, replay, interrupted (and that verdict); 3: the verdict `deviation`
# and the `deviation` object; 4: `metrics.failover_s` counts the node a fault took out once
# it is back (a single node killed and restarted has a failover time)
RESULT_VERSION = 4

# What result.json's verdict can say: the judge's outcomes, or that the run was stopped
# before it could be judged (Ctrl-C, SIGTERM, or the lab killed: see `interrupted`).
RunVerdict = Literal["held", "broken", "unknown", "interrupted", "deviation"]
INTERRUPTED: RunVerdict = "interrupted"
DEVIATION: RunVerdict = "deviation"


@dataclass(frozen=True)
class Interruption:
    """How a run was stopped: the signal, the phase it was in, the faults healed on the
    way out (ids), and those whose heal failed (`id: error`)."""

    signal: str
    phase: str
    healed: tuple[str, ...] = ()
    heal_errors: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "signal": self.signal,
            "phase": self.phase,
            "healed": list(self.healed),
            "heal_errors": list(self.heal_errors),
        }


@dataclass(frozen=True)
class Judgement:
    """What the judge made of a run: the checker's sets, the figures, the verdict, and what
    the target's declared deviations need to be matched (`deviation(...)`)."""

    prediction: Prediction
    check: CheckResult
    metrics: RunMetrics
    verdict: Verdict
    declarations: Declarations | None = None
    observation: Observation | None = None
    defaults: tuple[tuple[str, str], ...] = ()  # the target's own settings' defaults
    target_version: str | None = None  # the version the target ran (None: it has none)

    def deviation(
        self, scenario: str, backend: str, mode: str, settings: Mapping[str, str] | None = None
    ) -> DeviationOutcome | None:
        """The run against the target's deviations declared for it (None: none declared);
        `settings`: the run's target settings (`group.target_context.<target>`)."""
        if self.declarations is None or self.observation is None:
            return None
        given = {**dict(self.defaults), **(settings or {})}
        declared = self.declarations.for_run(
            scenario, backend, mode, given, version=self.target_version
        )
        return assess(declared, self.observation, self.declarations.source, backend)


def judge_run(
    history: Path,
    events: Path,
    prediction: Prediction,
    target: TargetTraits,
    timings: Timings | None = None,
) -> Judgement:
    """Check the history, measure the run and judge it against the prediction (its bounds
    from the run's `timings`, lab.judge.bounds); read what the target's declared deviations
    (if any) look for."""
    check = check_path(history)
    observed = read_events(events)
    operations = read_operations(history)
    metrics = run_metrics(operations, observed)
    verdict = prediction.judge(check, observed, metrics, target, operations, timings)
    if target.deviations is None:
        return Judgement(prediction, check, metrics, verdict, target_version=target.version)
    declared = load_declarations(Path(target.deviations))
    seen = Observation.gather(verdict, check, metrics, observed, events.parent, declared.needles())
    return Judgement(
        prediction, check, metrics, verdict, declared, seen, target.settings, target.version
    )


@dataclass(frozen=True)
class ReplayOf:
    """The run a replay repeats: its folder, verdict and violation kinds. A replay
    reproduces a broken (or unknown) run when it shows one of the same kinds of violation,
    whatever the counts; it reproduces a held run when it holds too."""

    folder: str
    verdict: Outcome
    violations: tuple[str, ...]

    def reproduced(self, verdict: RunVerdict, violations: tuple[str, ...]) -> bool:
        if self.verdict == "held":
            return verdict == "held"
        return bool(set(self.violations) & set(violations))

    def to_json(self, verdict: RunVerdict, violations: tuple[str, ...]) -> dict[str, Any]:
        again = self.reproduced(verdict, violations)
        return {
            "of": self.folder,
            "original": {"verdict": self.verdict, "violations": list(self.violations)},
            "reproduced": again,
            "outcome": "reproduced" if again else "did not reproduce",
        }

    @staticmethod
    def read(folder: Path) -> ReplayOf:
        """The replayed run's outcome from its result.json (an unfinished run: unknown)."""
        try:
            raw = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return ReplayOf(str(folder), "unknown", ("error",))
        verdict = raw.get("verdict", "unknown")
        kinds = tuple(str(k) for k in raw.get("violations", ()))
        if verdict != "held" and not kinds:  # a result.json written before violation kinds
            kinds = ("error",) if raw.get("error") else ("unknown",)
        if verdict == DEVIATION:  # a known deviation: the prediction broke, as declared
            verdict = "broken"
        return ReplayOf(str(folder), verdict if verdict in ("held", "broken") else "unknown", kinds)


@dataclass(frozen=True)
class RunResult:
    """Everything result.json says; `error` is set when the run did not finish."""

    scenario: str
    seed: int
    target: str
    backend: str
    verdict: RunVerdict
    reasons: tuple[str, ...]
    reproduce: str
    mode: str = "replicated-group"
    violations: tuple[str, ...] = ()
    prediction: str | None = None
    check: CheckResult | None = None
    metrics: RunMetrics | None = None
    error: str | None = None
    replay: ReplayOf | None = None
    interrupted: Interruption | None = None
    deviation: DeviationOutcome | None = None
    target_version: str | None = None

    @staticmethod
    def judged(
        spec: RunSpec, judgement: Judgement, reproduce: str, replay: ReplayOf | None = None
    ) -> RunResult:
        """A judged run; its verdict is `deviation` when it shows a declared deviation."""
        own = spec.group.target_context.get(spec.target, {})
        deviation = judgement.deviation(spec.scenario, spec.backend, spec.group.mode, own)
        reproduced = deviation is not None and deviation.reproduced
        return RunResult(
            scenario=spec.scenario,
            seed=spec.seed,
            target=spec.target,
            backend=spec.backend,
            verdict=DEVIATION if reproduced else judgement.verdict.outcome,
            reasons=judgement.verdict.reasons,
            reproduce=reproduce,
            mode=spec.group.mode,
            violations=judgement.verdict.violations,
            prediction=judgement.prediction.text,
            check=judgement.check,
            metrics=judgement.metrics,
            replay=replay,
            deviation=deviation,
            target_version=judgement.target_version,
        )

    @staticmethod
    def failed(
        spec: RunSpec, error: BaseException, reproduce: str, replay: ReplayOf | None = None
    ) -> RunResult:
        """A run that ended with an error before it could be judged: verdict unknown."""
        return RunResult(
            scenario=spec.scenario,
            seed=spec.seed,
            target=spec.target,
            backend=spec.backend,
            verdict="unknown",
            reasons=(),
            reproduce=reproduce,
            mode=spec.group.mode,
            violations=("error",),
            error=f"{type(error).__name__}: {error}",
            replay=replay,
            target_version=spec.target_version,
        )

    @staticmethod
    def stopped(
        spec: RunSpec,
        how: Interruption,
        reproduce: str,
        judgement: Judgement | None = None,
        replay: ReplayOf | None = None,
    ) -> RunResult:
        """A run interrupted before its end: verdict `interrupted`, with the checker's result
        and the figures of the history it left when they could be made."""
        return RunResult(
            scenario=spec.scenario,
            seed=spec.seed,
            target=spec.target,
            backend=spec.backend,
            verdict=INTERRUPTED,
            reasons=(f"interrupted by {how.signal} in phase {how.phase}",),
            reproduce=reproduce,
            mode=spec.group.mode,
            violations=(INTERRUPTED,),
            prediction=None if judgement is None else judgement.prediction.text,
            check=None if judgement is None else judgement.check,
            metrics=None if judgement is None else judgement.metrics,
            replay=replay,
            interrupted=how,
            target_version=spec.target_version
            if judgement is None
            else (judgement.target_version or spec.target_version),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "v": RESULT_VERSION,
            "scenario": self.scenario,
            "seed": self.seed,
            "target": self.target,
            **({} if self.target_version is None else {"target_version": self.target_version}),
            "backend": self.backend,
            "mode": self.mode,
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "violations": list(self.violations),
        }
        if self.prediction is not None:
            out["prediction"] = self.prediction
        if self.check is not None:
            out["check"] = self.check.to_json()
        if self.metrics is not None:
            out["metrics"] = self.metrics.to_json()
        if self.error is not None:
            out["error"] = self.error
        if self.interrupted is not None:
            out["interrupted"] = self.interrupted.to_json()
        if self.deviation is not None:
            out["deviation"] = self.deviation.to_json()
        if self.replay is not None:
            out["replay"] = self.replay.to_json(self.verdict, self.violations)
        out["reproduce"] = self.reproduce
        return out

    def write(self, path: Path) -> None:
        """result.json, written whole or not at all."""
        write_json(path, self.to_json())
