"""Runs judged again: a run folder's verdict made anew from its own spec, history and
events by the lab as it is now (its checker, the scenario's prediction, the target's
declared deviations and their `seen` rates), without touching the folder.

A verdict is the judge's at the time the run ended. When the judge learns something (a
declaration added, a bug in how it reads a broker's logs fixed), the runs already made
keep their old verdicts; `lab tables suite|seen --rejudge` shows them as this lab judges
them, and says, per run, what the run itself recorded when the two differ.

    rejudged(folder, recorded, say) → result dict (what result.json would say now), or
                                      `recorded` when the run cannot be judged again
                                      (interrupted, ended with an error, or its spec no
                                      longer names a scenario or target the lab knows)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.compose import judging_of
from lab.ground.errors import LabError
from lab.ground.spec import RunSpec
from lab.judge.result import RunResult, judge_run

__all__ = ["RECORDED_KEY", "rejudged"]

RECORDED_KEY = "recorded_verdict"  # in a re-judged result: the verdict the run wrote itself


def rejudged(
    folder: Path, recorded: dict[str, Any] | None, say: Callable[[str], None]
) -> dict[str, Any] | None:
    """The result the lab gives the run in `folder` now (see the module's docstring)."""
    if recorded is None or recorded.get("error") or recorded.get("interrupted"):
        return recorded  # nothing judged then; nothing to judge again
    try:
        path = folder / "spec.json"
        spec = RunSpec.from_json(json.loads(path.read_text(encoding="utf-8")), path)
        prediction, traits, timings = judging_of(spec)
        judgement = judge_run(
            folder / "history.jsonl", folder / "events.jsonl", prediction, traits, timings
        )
    except (LabError, OSError, ValueError) as exc:
        say(f"lab: {folder}: not judged again ({exc}); its recorded verdict is kept")
        return recorded
    result = RunResult.judged(spec, judgement, str(recorded.get("reproduce", ""))).to_json()
    if result.get("verdict") != recorded.get("verdict"):
        result[RECORDED_KEY] = recorded.get("verdict")
    return result
