"""What `lab allure` adds to a results folder before Allure reads it, so that a report made
every night says where it came from and how the nights compare.

    copy_history(previous_report, results_dir)   PREVIOUS/history/ → RESULTS/history/: the
                                                 Trend widget's earlier points
    kept_history(store) / keep_history(report, store)
                                                 a folder that carries the Trend from one
                                                 report to the next (a CI cache): read when
                                                 it holds a history, written after
    Executor(...).write(results_dir)             RESULTS/executor.json: the executor widget
    executor_from_github(env)                    the GitHub Actions run the variables name
    prepare_results(results_dir, history_from, executor)
                                                 all of it, and categories.json

Allure keeps its trend in the report it generates (`history/history-trend.json` and
friends); the next report carries it on only when that folder is copied into the next
results. Each point of the trend is labelled with the executor's build order and report
name, so a nightly job names both.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from lab.ground.errors import UsageError
from lab.reporting.allure_categories import write_categories

__all__ = [
    "GITHUB_EXECUTOR",
    "Executor",
    "copy_history",
    "executor_from_github",
    "executor_of",
    "keep_history",
    "kept_history",
    "prepare_results",
]

_HISTORY = "history"
GITHUB_EXECUTOR = "GitHub Actions"


def _url(text: str | None, flag: str) -> str | None:
    if text is None:
        return None
    parsed = urlparse(text)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise UsageError(f"{flag} {text!r}: give an http(s) URL")
    return text


@dataclass(frozen=True)
class Executor:
    """Allure's executor.json: who ran the tests (a CI server) and which build this is.
    `build_order` orders the trend's points; `report_url` links a point to its report."""

    name: str
    type: str | None = None
    url: str | None = None
    build_order: int | None = None
    build_name: str | None = None
    build_url: str | None = None
    report_name: str | None = None
    report_url: str | None = None

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise UsageError("the executor needs a name (--executor-name)")
        if self.build_order is not None and self.build_order < 1:
            raise UsageError(f"--build-order {self.build_order}: give a whole number from 1")
        _url(self.url, "--executor-url")
        _url(self.build_url, "the build URL")
        _url(self.report_url, "--report-url")

    def to_json(self) -> dict[str, Any]:
        fields = {
            "name": self.name,
            "type": self.type,
            "url": self.url,
            "buildOrder": self.build_order,
            "buildName": self.build_name,
            "buildUrl": self.build_url,
            "reportName": self.report_name,
            "reportUrl": self.report_url,
        }
        return {k: v for k, v in fields.items() if v is not None}

    def write(self, results_dir: Path) -> Path:
        path = results_dir / "executor.json"
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")
        return path


def executor_from_github(env: Mapping[str, str]) -> Executor | None:
    """The run GitHub Actions' default variables describe (GITHUB_ACTIONS=true), else None:
    the run number as build order, the run's page as build and report URL."""
    if env.get("GITHUB_ACTIONS") != "true":
        return None
    server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    repository = env.get("GITHUB_REPOSITORY", "")
    run_id = env.get("GITHUB_RUN_ID", "")
    number = env.get("GITHUB_RUN_NUMBER", "")
    workflow = env.get("GITHUB_WORKFLOW", "") or "workflow"
    attempt = env.get("GITHUB_RUN_ATTEMPT", "1")
    build = f"{workflow} #{number}" + (f" (attempt {attempt})" if attempt not in ("", "1") else "")
    run_url = f"{server}/{repository}/actions/runs/{run_id}" if repository and run_id else None
    return Executor(
        name=GITHUB_EXECUTOR,
        type="github",
        url=f"{server}/{repository}/actions" if repository else None,
        build_order=int(number) if number.isdigit() and int(number) > 0 else None,
        build_name=build,
        build_url=run_url,
        report_name=build,
        report_url=run_url,
    )


def executor_of(
    *,
    name: str | None,
    url: str | None,
    build_order: int | None,
    report_url: str | None,
    env: Mapping[str, str],
) -> Executor | None:
    """The executor the flags give, each field left out taken from GitHub Actions' variables
    when they are set; None when neither says anything."""
    base = executor_from_github(env)
    if all(v is None for v in (name, url, build_order, report_url)):
        return base
    if base is None:
        if name is None:
            raise UsageError("--executor-url, --build-order and --report-url need --executor-name")
        base = Executor(name=name)
    return Executor(
        name=name if name is not None else base.name,
        type=base.type,
        url=url if url is not None else base.url,
        build_order=build_order if build_order is not None else base.build_order,
        build_name=base.build_name,
        build_url=base.build_url,
        report_name=base.report_name,
        report_url=report_url if report_url is not None else base.report_url,
    )


def copy_history(previous_report: Path, results_dir: Path) -> Path:
    """PREVIOUS_REPORT/history/ copied over RESULTS/history/ (what was there is replaced)."""
    if not previous_report.is_dir():
        raise UsageError(f"--history-from {previous_report}: no such report folder")
    source = previous_report / _HISTORY
    if not (source / "history-trend.json").is_file():
        raise UsageError(
            f"--history-from {previous_report}: no {_HISTORY}/history-trend.json in it "
            "(give the folder of a report `lab allure` made)"
        )
    dest = results_dir / _HISTORY
    if dest.resolve() != source.resolve():
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest)
    return dest


def kept_history(store: Path) -> Path | None:
    """`store` when it holds a history to carry on (the previous report's), else None: the
    first report made with a store starts the Trend."""
    if store.exists() and not store.is_dir():
        raise UsageError(f"--keep-history {store}: a file, not a folder")
    return store if (store / _HISTORY / "history-trend.json").is_file() else None


def keep_history(report_dir: Path, store: Path) -> Path:
    """REPORT/history/ copied into STORE/history/ (what was there replaced), for the next."""
    source = report_dir / _HISTORY
    dest = store / _HISTORY
    staging = store / f".{_HISTORY}.new"
    shutil.rmtree(staging, ignore_errors=True)
    store.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, staging)
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)
    return dest


def prepare_results(
    results_dir: Path, *, history_from: Path | None, executor: Executor | None
) -> None:
    """Everything `lab allure` writes into RESULTS before generating: the previous report's
    history, executor.json, categories.json (always)."""
    if history_from is not None:
        copy_history(history_from, results_dir)
    if executor is not None:
        executor.write(results_dir)
    write_categories(results_dir)
