"""A run folder handed to the running test in Allure: its report (allure_report.py) as
steps, labels, description and attachments, through allure-commons' reporter."""

from __future__ import annotations

from pathlib import Path
from uuid import uuid4

from allure_commons.model2 import Label, Parameter, Status, StatusDetails, TestStepResult
from allure_commons.reporter import AllureReporter

from lab.ground.errors import LabError
from lab.reporting.allure_report import (
    Attachment,
    RunReport,
    jsonl_objects,
    run_report,
    run_wall_start_ns,
    scenario_family,
)
from lab.run.folder import RunFolder

__all__ = ["attach_to_running_test", "publish"]


def _attach(reporter: AllureReporter, attachment: Attachment, parent_uuid: str) -> None:
    reporter.attach_data(
        uuid4().hex,
        attachment.body,
        name=attachment.name,
        attachment_type=attachment.mime,
        extension=attachment.extension,
        parent_uuid=parent_uuid,
    )


_STATUS = {"passed": Status.PASSED, "broken": Status.BROKEN, "skipped": Status.SKIPPED}


def publish(report: RunReport, reporter: AllureReporter, test_uuid: str | None = None) -> None:
    """Hand `report` to the test `test_uuid` (default: the running one) of `reporter`."""
    test = reporter.get_test(test_uuid)
    if test is None:
        return
    test.labels.extend(Label(name=name, value=value) for name, value in report.labels)
    test.description = report.description.markdown()
    test.descriptionHtml = report.description.html()
    for step in report.steps:
        uuid = uuid4().hex
        reporter.start_step(
            test.uuid,
            uuid,
            TestStepResult(
                name=step.title,
                start=step.start_ms,
                parameters=[Parameter(name=k, value=v) for k, v in step.parameters],
            ),
        )
        for attachment in step.attachments:
            _attach(reporter, attachment, uuid)
        reporter.stop_step(
            uuid,
            stop=step.stop_ms,
            status=_STATUS[step.status],
            statusDetails=StatusDetails(message=step.error) if step.error else None,
        )
    for attachment in report.attachments:
        _attach(reporter, attachment, test.uuid)


def attach_to_running_test(
    listener: object, path: Path, *, results_dir: Path, test_command: str | None
) -> None:
    """Attach the run folder at `path` to the test allure-pytest's `listener` is running,
    and merge its settings into the results' environment.properties."""
    from lab.reporting.allure_environment import environment_of, merge_environment

    reporter = getattr(listener, "allure_logger", None)
    if not isinstance(reporter, AllureReporter):
        raise LabError("allure-pytest's listener has no reporter this lab version knows")
    family = scenario_family(RunFolder.open_existing(path).read_spec().get("scenario", ""))
    offset = run_wall_start_ns(jsonl_objects(path / "events.jsonl"))
    report = run_report(path, family=family, offset_ns=offset, test_command=test_command)
    publish(report, reporter)
    merge_environment(results_dir, environment_of(report.spec))
