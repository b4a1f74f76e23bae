"""rediscover: how fast the lab's own campaigns find a real broker's known losses, unaided.

For each generator (`random`, the nightly's draws; `coverage`, the guided campaign) and trial,
a real `lab campaign` of `random` runs against the target with the settings given (RabbitMQ's
mirrored queues: `--setting queue-type=mirrored`), with a fixed budget and its own failure
database, and is ended at its first run that lost acknowledged messages. Nothing in it knows
the published loss scenarios: the campaign draws from the same generators the nightly uses.
The first such run is then shrunk (`lab shrink`), and matched against the published loss
scenarios afterwards, from its own evidence (lab.bench.rediscover_match). `--control` runs the
same campaigns with the target's own defaults (RabbitMQ: quorum queues), or with the settings
`--control-setting` changes, where nothing acknowledged should be lost. The campaigns'
folders stay in `campaigns/rediscover-<UTC>/`.

    lab bench rediscover --target rabbitmq --setting queue-type=mirrored
        [--setting partition-handling=autoheal] [--budget 10m] [--trials 3]
        [--generators random,coverage] [--control | --control-setting queue-type=quorum]
        [--seed S] [--shrink-budget 5m] [--page F]

The figure, last: found k/N and the median minutes to the first acknowledged loss for each
generator, and the control's, e.g.

    rediscover rabbitmq queue-type=mirrored: random 2/3 (median 6.1 min), coverage 3/3 (median
    3.9 min); control (rabbitmq's defaults) 0/3 lost within 10 min
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from lab.bench._base import Benchmark, Say
from lab.bench.detection_request import DEFAULT_SEED, GENERATORS
from lab.bench.rediscover_match import match_run
from lab.bench.rediscover_trials import RediscoverRequest, Trial
from lab.campaign.plan import parse_budget
from lab.ground.errors import UsageError
from lab.ground.paths import LAB_ROOT
from lab.ground.spec import TARGETS
from lab.ground.spec_words import parse_target_settings

__all__ = ["BENCHMARK", "RediscoverRequest", "Trial", "rediscover_request", "run_rediscover"]

_SLACK_S = 120.0  # a campaign's start, its last run past the budget, its stop
LOST = "lost"


def rediscover_request(args: argparse.Namespace) -> RediscoverRequest:
    """The request from `lab bench rediscover`'s flags; a UsageError for a bad one."""
    if args.target not in TARGETS or args.target == "broker_ref":
        raise UsageError(
            f"lab bench rediscover runs against a real broker: --target {args.target!r} "
            f"(known: {', '.join(t for t in TARGETS if t != 'broker_ref')})"
        )
    settings = parse_target_settings(args.setting)
    control = parse_target_settings(args.control_setting) if args.control_setting else None
    names = tuple(p.strip() for p in (args.generators or "random,coverage").split(",") if p)
    for name in names:
        if name not in GENERATORS:
            raise UsageError(f"unknown generator {name!r} (known: {', '.join(GENERATORS)})")
    trials = 3 if args.trials is None else args.trials
    if trials < 1:
        raise UsageError(f"--trials {trials}: at least one")
    shrink = str(args.shrink_budget or "5m").strip()
    return RediscoverRequest(
        target=args.target,
        settings=tuple(sorted(settings.items())),
        budget_s=parse_budget(args.budget or "10m"),
        trials=trials,
        generators=names,
        control=bool(args.control) or control is not None,
        seed=DEFAULT_SEED if args.seed is None else args.seed,
        shrink_budget_s=0.0 if shrink == "0" else parse_budget(shrink),
        page=args.page,
        control_settings=None if control is None else tuple(sorted(control.items())),
    )


def _records(out: Path) -> list[dict[str, object]]:
    found = []
    for path in sorted((out / "records").glob("*.json")):
        try:
            found.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError):
            continue  # being written
    return [r for r in found if r.get("kind") != "replay"]


def _losing(records: list[dict[str, object]]) -> dict[str, object] | None:
    done = sorted(records, key=lambda r: _ended(r))
    return next((r for r in done if r.get("verdict") == "broken" and LOST in r["violations"]), None)  # type: ignore[operator]


def _ended(record: dict[str, object]) -> dt.datetime:
    began = dt.datetime.strptime(str(record["started"]), "%Y-%m-%dT%H:%M:%S.%fZ")
    return began.replace(tzinfo=dt.UTC) + dt.timedelta(seconds=float(str(record["seconds"])))


def _campaign(
    request: RediscoverRequest, out: Path, generator: str, seed: int, control: bool
) -> tuple[dt.datetime, list[dict[str, object]]]:
    """One campaign, ended (SIGINT, as a user's Ctrl-C) at its first run that lost
    acknowledged messages; when it began, and its fresh runs' records."""
    settings = request.control_given if control else request.settings
    argv = [
        sys.executable, "-m", "lab", "campaign", "--budget", f"{int(request.budget_s)}s",
        "--scenarios", "random", "--targets", request.target, "--guide", generator,
        "--seed", str(seed), "--out", str(out), "--failures-dir", str(out / "failures"),
        "--no-report", *(f"--target-setting={k}={v}" for k, v in settings),
    ]  # fmt: skip
    began = dt.datetime.now(dt.UTC)
    with (out.parent / f"{out.name}.log").open("w") as log:
        proc = subprocess.Popen(
            argv, cwd=LAB_ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + request.budget_s + _SLACK_S
        try:
            while proc.poll() is None:
                if _losing(_records(out)) is not None or time.monotonic() > deadline:
                    os.killpg(proc.pid, signal.SIGINT)
                    proc.wait(timeout=300)
                    break
                time.sleep(2.0)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return began, _records(out)


def _shrink(request: RediscoverRequest, folder: Path, out: Path) -> tuple[str, tuple[str, ...]]:
    if request.shrink_budget_s <= 0:
        return "not shrunk", ()
    argv = [
        sys.executable, "-m", "lab", "shrink", str(folder), "--budget",
        f"{int(request.shrink_budget_s)}s", "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=LAB_ROOT, capture_output=True, text=True, check=False)
    try:
        saved = json.loads((out / "shrink.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "did not reproduce" if done.returncode == 4 else "error", ()
    outcome = "shrunk" if saved.get("reproduced") else "did not reproduce"
    return outcome, tuple(str(k) for k in saved.get("kept", ()))


def _trial(request: RediscoverRequest, root: Path, generator: str, k: int, control: bool) -> Trial:
    seed = request.seed + k - 1
    out = root / f"{'control-' if control else ''}{generator}-{k}"
    began, records = _campaign(request, out, generator, seed, control)
    losing = _losing(records)
    if losing is None:
        return Trial(generator, k, seed, control, len(records), False)
    ended = _ended(losing)
    runs = sum(1 for r in records if _ended(r) <= ended)
    folder = out / str(losing["folder"])
    outcome, kept = _shrink(request, folder, out.parent / f"{out.name}-shrink")
    return Trial(
        generator, k, seed, control, len(records), True,
        minutes=round((ended - began).total_seconds() / 60, 2),
        runs_to_loss=runs,
        kinds=tuple(str(v) for v in losing["violations"]),  # type: ignore[attr-defined]
        folder=folder,
        match=match_run(folder),
        shrunk=kept,
        shrink_outcome=outcome,
    )  # fmt: skip


def _summary(trials: list[Trial], generator: str, control: bool) -> str:
    mine = [t for t in trials if t.generator == generator and t.control == control]
    found = [t.minutes for t in mine if t.found and t.minutes is not None]
    median = f" (median {statistics.median(found):.1f} min)" if found else ""
    return f"{generator} {len(found)}/{len(mine)}{median}"


def headline(request: RediscoverRequest, trials: list[Trial]) -> str:
    own = ", ".join(_summary(trials, g, False) for g in request.generators)
    line = f"rediscover {request.target} {request.given}: {own}"
    if request.control:
        control = ", ".join(_summary(trials, g, True) for g in request.generators)
        minutes = request.budget_s / 60
        line += f"; control ({request.control_name}) {control} lost within {minutes:g} min"
    return line


def run_rediscover(request: RediscoverRequest, say: Say) -> str:
    """Every trial, one campaign at a time; the page when asked; the headline."""
    from lab.bench.rediscover_page import write_page

    started = dt.datetime.now(dt.UTC)
    root = Path.cwd() / "campaigns" / f"rediscover-{started:%Y%m%dT%H%M%SZ}"
    root.mkdir(parents=True)
    say(f"campaigns into {root}")
    trials: list[Trial] = []
    for control in (False, True) if request.control else (False,):
        for generator in request.generators:
            for k in range(1, request.trials + 1):
                say(f"{'control ' if control else ''}{generator} trial {k}: campaign")
                trial = _trial(request, root, generator, k, control)
                trials.append(trial)
                say(_trial_line(trial))
    line = headline(request, trials)
    if request.page is not None:
        write_page(request.page, request, trials, line, started)
    return line


def _trial_line(t: Trial) -> str:
    if not t.found:
        return f"  nothing acknowledged lost in {t.runs} runs"
    assert t.match is not None
    return (
        f"  lost acknowledged messages in run {t.runs_to_loss} after {t.minutes} min "
        f"({', '.join(t.kinds)}); matches {t.match.scenario}; {t.shrink_outcome}"
        + (f": {'; '.join(t.shrunk)}" if t.shrunk else "")
    )


def _unused(say: Say) -> str:
    raise UsageError(
        "lab bench rediscover needs a target and its settings: lab bench rediscover "
        "--target rabbitmq --setting queue-type=mirrored"
    )


BENCHMARK = Benchmark(
    name="rediscover",
    description="campaigns against a real broker's settings, to their first acknowledged "
    "loss: minutes and runs, the match with a published loss scenario, the shrunk schedule",
    run=_unused,
)
