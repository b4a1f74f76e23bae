"""What `lab allure` writes into the results before Allure reads them: categories by violation
kind (matched as Allure matches them), the executor, the previous report's history."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from allure_commons.utils import format_exception
from conftest import run_lab

from lab.ground.errors import UsageError
from lab.judge import cluster_expectations, expectations, prediction
from lab.reporting.allure_categories import (
    CATEGORY_STATUSES,
    categories,
    categories_of,
    deviation_categories,
    violation_kinds,
    violations_text,
    write_categories,
)
from lab.reporting.allure_ci import (
    GITHUB_EXECUTOR,
    Executor,
    copy_history,
    executor_from_github,
    executor_of,
    keep_history,
    kept_history,
    prepare_results,
)
from scenarios.test_scenarios import _assert_held

# The kinds docs/run-folder.md and result.json name; the code may know more, never fewer.
DOCUMENTED_KINDS = {
    "lost", "unexpected", "resurrected", "duplicated", "two-masters", "no-two-masters",
    "no-loss", "no-refusal", "unavailable>bound", "served-while-stopped", "role-at-end",
    "log-missing", "status-not-reached", "status-reached", "event-missing", "event-seen",
    "metric-below", "clients-did-not-notice", "error", "not-drained", "nothing-acknowledged",
    "uncheckable",
}  # fmt: skip

GITHUB_ENV = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "lab-org/ha-chaos-lab",
    "GITHUB_RUN_ID": "987654321",
    "GITHUB_RUN_NUMBER": "42",
    "GITHUB_RUN_ATTEMPT": "1",
    "GITHUB_WORKFLOW": "nightly",
}


# --- the kinds, from the judge's code ---


def test_every_kind_the_judge_names_has_a_category() -> None:
    kinds = violation_kinds()
    assert set(kinds) >= DOCUMENTED_KINDS
    assert list(kinds) == sorted(set(kinds))
    for module in (expectations, cluster_expectations):
        for value in vars(module).values():
            if isinstance(value, type) and isinstance(getattr(value, "violation", None), str):
                assert value.violation in kinds, value
    for constant in (prediction.NOTHING_ACKNOWLEDGED, prediction.NOT_DRAINED):
        assert constant in kinds
    assert prediction.UNCHECKABLE_KIND in kinds
    assert [c.name for c in categories()] == list(kinds)


def test_kinds_are_read_from_the_code_not_a_list(tmp_path: Path) -> None:
    """A kind added to the judge (an attribute, an expectation without one, a pair in
    prediction.py, a `violations=` keyword) gets its category with no change elsewhere."""
    (tmp_path / "prediction.py").write_text(
        'SPLIT = "split-vote"\n'
        'IGNORED = "not a kind"\n'
        "def judge(found):\n"
        '    found.append(("stale-read", f"{1} read"))\n'
        '    found.append((SPLIT, "two votes"))\n'
        "    return [(k, r) for k, r in found]\n",
        encoding="utf-8",
    )
    (tmp_path / "expectations.py").write_text(
        "from typing import ClassVar, Protocol\n"
        "class Expectation(Protocol):\n"
        "    def unmet(self, facts): ...\n"
        "class LeaderStable:\n"
        '    violation: ClassVar[str] = "leader-flapped"\n'
        "    def unmet(self, facts): ...\n"
        "class QuorumKept:\n"
        "    def unmet(self, facts): ...\n"
        "def broke_off():\n"
        '    return dict(violations=("crashed",), reasons=("x",))\n'
        'PAIR = ("not-in-prediction", "so not a kind")\n',
        encoding="utf-8",
    )
    assert violation_kinds(tmp_path) == (
        "crashed",
        "leader-flapped",
        "quorum-kept",
        "split-vote",
        "stale-read",
    )


# --- matching a failure message as Allure does ---


def _scenario_failure(violations: tuple[str, ...]) -> str:
    """The message allure-pytest records for `_assert_held` on a broken run."""
    outcome = SimpleNamespace(
        check=SimpleNamespace(acknowledged=120),
        folder=SimpleNamespace(result=Path(__file__), path=Path("/runs/master-failure/x")),
        verdict=SimpleNamespace(held=False, violations=violations),
        summary="master-failure seed=7: prediction broken — acknowledged 120, lost 3 "
        "(3 acknowledged message(s) lost; two nodes were MASTER at the same time)",
        reproduce=".venv/bin/lab run master-failure --seed 7",
    )
    with pytest.raises(AssertionError) as caught:
        _assert_held(outcome)  # type: ignore[arg-type]
    message = format_exception(caught.type, caught.value)
    assert message is not None
    return message


def test_a_scenario_failure_lands_in_each_of_its_kinds() -> None:
    message = _scenario_failure(("lost", "two-masters"))
    assert "violations: lost, two-masters" in message
    assert categories_of("failed", message) == ("lost", "two-masters")


def test_a_kind_matches_only_as_a_whole_item() -> None:
    assert categories_of("failed", _scenario_failure(("no-two-masters",))) == ("no-two-masters",)
    assert categories_of("failed", _scenario_failure(("unavailable>bound",))) == (
        "unavailable>bound",
    )
    # the reasons mention "lost" and "MASTER"; only the violations line counts
    assert categories_of("failed", _scenario_failure(("role-at-end",))) == ("role-at-end",)


def test_nothing_acknowledged_is_its_own_category() -> None:
    outcome = SimpleNamespace(check=SimpleNamespace(acknowledged=0))
    with pytest.raises(AssertionError) as caught:
        _assert_held(outcome)  # type: ignore[arg-type]
    message = format_exception(caught.type, caught.value)
    assert categories_of("failed", message) == ("nothing-acknowledged",)


def test_a_campaign_failure_in_the_format_asked_for() -> None:
    """scenarios/test_campaign.py's messages, with the kinds as `(violations: …)`."""
    fresh = (
        "AssertionError: random/broker_ref/process seed=20260101: broken "
        f"({violations_text(['lost', 'unavailable>bound'])}); run folder /c/runs/random/x\n"
        "assert 'broken' == 'held'"
    )
    assert categories_of("failed", fresh) == ("lost", "unavailable>bound")
    known = f"XFAIL known failure 0a1b2c3d4e5f still fails ({violations_text(['two-masters'])})"
    assert categories_of("skipped", known) == ("two-masters",)


def test_results_outside_every_category() -> None:
    message = _scenario_failure(("lost",))
    assert categories_of("passed", message) == ()
    assert categories_of("failed", None) == ()
    assert categories_of("broken", "ClusterError: n1 did not start") == ()
    assert categories_of("failed", "violations: lost-ish") == ()


def test_a_synthetic_allure_result_is_categorised(tmp_path: Path) -> None:
    """An allure-pytest result file as the report reads it: status and statusDetails."""
    result = {
        "uuid": "3f1c",
        "name": "test_scenario_holds_its_prediction[split-brain]",
        "status": "failed",
        "statusDetails": {"message": _scenario_failure(("no-loss", "no-two-masters"))},
    }
    path = tmp_path / "3f1c-result.json"
    path.write_text(json.dumps(result), encoding="utf-8")
    read = json.loads(path.read_text(encoding="utf-8"))
    assert categories_of(read["status"], read["statusDetails"]["message"]) == (
        "no-loss",
        "no-two-masters",
    )


def test_categories_json_as_allure_reads_it(tmp_path: Path) -> None:
    written = json.loads(write_categories(tmp_path).read_text(encoding="utf-8"))
    deviations = [c.name for c in deviation_categories()]
    assert [c["name"] for c in written] == [*deviations, *violation_kinds()]
    lost = next(c for c in written if c["name"] == "lost")
    assert lost["matchedStatuses"] == list(CATEGORY_STATUSES)
    message = _scenario_failure(("lost",))
    assert re.fullmatch(lost["messageRegex"], message, re.DOTALL)
    assert set(lost) == {"name", "matchedStatuses", "messageRegex"}


# --- the executor, the history ---


def test_executor_from_github_actions_variables() -> None:
    executor = executor_from_github(GITHUB_ENV)
    assert executor is not None
    run_url = "https://github.com/lab-org/ha-chaos-lab/actions/runs/987654321"
    assert executor.to_json() == {
        "name": GITHUB_EXECUTOR,
        "type": "github",
        "url": "https://github.com/lab-org/ha-chaos-lab/actions",
        "buildOrder": 42,
        "buildName": "nightly #42",
        "buildUrl": run_url,
        "reportName": "nightly #42",
        "reportUrl": run_url,
    }
    rerun = executor_from_github({**GITHUB_ENV, "GITHUB_RUN_ATTEMPT": "2"})
    assert rerun is not None and rerun.build_name == "nightly #42 (attempt 2)"
    assert executor_from_github({"CI": "true"}) is None


def test_flags_win_over_github_and_stand_alone() -> None:
    mixed = executor_of(
        name=None,
        url=None,
        build_order=None,
        report_url="https://reports.example.org/night/42/",
        env=GITHUB_ENV,
    )
    assert mixed is not None
    assert (mixed.name, mixed.build_order) == (GITHUB_EXECUTOR, 42)
    assert mixed.report_url == "https://reports.example.org/night/42/"
    alone = executor_of(name="laptop", url=None, build_order=7, report_url=None, env={})
    assert alone == Executor(name="laptop", build_order=7)
    assert alone.to_json() == {"name": "laptop", "buildOrder": 7}
    assert executor_of(name=None, url=None, build_order=None, report_url=None, env={}) is None


@pytest.mark.parametrize(
    ("fields", "complaint"),
    [
        ({"build_order": 3}, "need --executor-name"),
        ({"name": "ci", "build_order": 0}, "--build-order 0"),
        ({"name": "ci", "url": "ftp://ci"}, "--executor-url"),
        ({"name": "ci", "report_url": "reports/42"}, "--report-url"),
        ({"name": " "}, "needs a name"),
    ],
)
def test_bad_executor_flags(fields: dict[str, object], complaint: str) -> None:
    given = {"name": None, "url": None, "build_order": None, "report_url": None, **fields}
    with pytest.raises(UsageError, match=re.escape(complaint)):
        executor_of(env={}, **given)  # type: ignore[arg-type]


def _report_with_history(folder: Path, points: int) -> Path:
    (folder / "history").mkdir(parents=True)
    trend = [{"data": {"failed": 0, "passed": 1, "total": 1}} for _ in range(points)]
    (folder / "history" / "history-trend.json").write_text(json.dumps(trend))
    (folder / "history" / "history.json").write_text("{}")
    return folder


def test_history_replaces_what_the_results_held(tmp_path: Path) -> None:
    previous = _report_with_history(tmp_path / "report", points=3)
    results = tmp_path / "results"
    (results / "history").mkdir(parents=True)
    (results / "history" / "stale.json").write_text("{}")
    copied = copy_history(previous, results)
    assert sorted(p.name for p in copied.iterdir()) == ["history-trend.json", "history.json"]
    assert len(json.loads((copied / "history-trend.json").read_text())) == 3


def test_history_from_a_folder_that_is_no_report(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such report folder"):
        copy_history(tmp_path / "nope", tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match=r"history-trend\.json"):
        copy_history(tmp_path / "empty", tmp_path)


def test_a_kept_history_carries_the_trend_from_night_to_night(tmp_path: Path) -> None:
    """`lab allure --keep-history DIR`: the first night finds nothing to carry on and starts
    the Trend; each report's history is saved into DIR for the next."""
    store = tmp_path / "cache" / "allure-history"
    assert kept_history(store) is None  # the first night: nothing yet
    night1 = _report_with_history(tmp_path / "night1", points=1)
    keep_history(night1, store)
    assert kept_history(store) == store
    night2 = _report_with_history(tmp_path / "night2", points=2)
    (store / "history" / "stale.json").write_text("{}")
    keep_history(night2, store)
    assert sorted(p.name for p in (store / "history").iterdir()) == [
        "history-trend.json",
        "history.json",
    ]
    assert len(json.loads((store / "history" / "history-trend.json").read_text())) == 2
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="a file, not a folder"):
        kept_history(tmp_path / "file")


def test_prepare_results_writes_all_three(tmp_path: Path) -> None:
    previous = _report_with_history(tmp_path / "report", points=1)
    results = tmp_path / "results"
    results.mkdir()
    prepare_results(results, history_from=previous, executor=Executor(name="ci", build_order=2))
    assert json.loads((results / "executor.json").read_text()) == {"name": "ci", "buildOrder": 2}
    assert (results / "history" / "history-trend.json").is_file()
    written = json.loads((results / "categories.json").read_text())
    assert len(written) == len(deviation_categories()) + len(violation_kinds())


def test_allure_command_bad_flags_are_one_line(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    for flags, named in (
        (["--history-from", str(tmp_path / "nope")], "nope"),
        (["--executor-name", "ci", "--report-url", "not-a-url"], "--report-url"),
        (["--build-order", "x"], "--build-order"),
        (["--build-order", "4"], "--executor-name"),
        (["--history-from", "a", "--keep-history", "b"], "give one"),
    ):
        done = run_lab(
            "allure", str(results), "--out", str(tmp_path / "out"), *flags,
            cwd=tmp_path, env={"GITHUB_ACTIONS": "false"},
        )  # fmt: skip
        err = done.stderr.strip().splitlines()
        assert done.returncode == 2, (flags, done.stderr)
        assert len(err) == 1 and err[0].startswith("lab: error: ") and named in err[0], err
    assert not (tmp_path / "out").exists()
