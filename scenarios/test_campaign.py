"""A campaign as a pytest session, installed with the lab: `pytest --pyargs
scenarios.test_campaign --lab-campaign 30m -n auto --alluredir allure-results` from any
folder — one test per run (recorded failures first, then fresh seeds), each attached to
Allure with the commands that reproduce it; campaign.json and the summary at the end.
Without `--lab-campaign` the one test here is skipped, saying so.

A fresh run passes when its prediction held. A replay of a recorded failure that still
fails is an expected failure (xfail, with its violation kinds); one that no longer
reproduces passes.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from lab.campaign.session import CampaignSession, OutOfBudget
from lab.campaign.tasks import Task
from lab.pytest_campaign import rerun_line
from lab.reporting.allure_categories import violations_text


def test_campaign_run(
    campaign_task: Task, lab_campaign: CampaignSession, lab_report: Callable[..., None]
) -> None:
    try:
        records = lab_campaign.run(campaign_task)
    except OutOfBudget as exc:
        pytest.skip(str(exc))
    for record in records:
        if record.folder is not None:
            # A failure is run again from the failure database; a held run by its own line.
            again = rerun_line(record, lab_campaign.out_dir, lab_campaign.db.root, os.environ)
            lab_report(lab_campaign.out_dir / record.folder, test_command=again or None)
    last = records[-1]
    said = violations_text(last.violations)  # Allure's categories match on it
    if campaign_task.failure is not None:
        if last.reproduced:
            pytest.xfail(f"known failure {campaign_task.failure.id} still fails ({said})")
        return
    assert last.verdict == "held", (
        f"{last.cell} seed={last.seed}: {last.verdict} ({said}); "
        f"run folder {lab_campaign.out_dir / str(last.folder)}"
        + (f"; {last.error}" if last.error else "")
    )
