"""Each scenario as a test: run it on real processes and assert the documents' prediction."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lab.runner import RunOutcome, reproduce_command
from scenarios.catalog import SCENARIOS


@pytest.mark.processes
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_holds_its_prediction(name: str, lab_run: Callable[[str], RunOutcome]) -> None:
    outcome = lab_run(name)
    assert outcome.check.acknowledged > 0, "the workload acknowledged nothing"
    assert outcome.folder.result.is_file()
    assert outcome.verdict.held, (
        f"{outcome.summary}\nrun folder: {outcome.folder.path}\n"
        f"reproduce: {reproduce_command(outcome.folder)}"
    )
