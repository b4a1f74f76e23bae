"""`lab campaign`, `lab campaign merge`, `lab shrink`: nightly chaos runs and failing
schedules cut down to what matters (the failure database: lab.cli.failures)."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from lab.cli.common import Commands, say
from lab.cli.failures import DEFAULT_FAILURES
from lab.ground.errors import UsageError
from lab.ground.extras import DOCKER, REPORTS, require

if TYPE_CHECKING:
    from lab.campaign.plan import CampaignRequest
    from lab.campaign.summary import CampaignSummary

__all__ = ["register"]


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> Commands:
    campaign = sub.add_parser(
        "campaign",
        help="runs with fresh seeds in a time budget, recorded failures first "
        "(`lab campaign merge DIR… --out DIR` joins campaign folders)",
    )
    campaign.add_argument("merge", nargs="*", help="`merge DIR…`: join campaign folders")
    campaign.add_argument("--budget", default="30m", help="e.g. 30m, 90s, 1h30m (default 30m)")
    campaign.add_argument("--scenarios", default="random", help="comma-separated (default random)")
    campaign.add_argument("--targets", default="broker_ref", help="comma-separated")
    campaign.add_argument("--backends", default="process", help="comma-separated")
    campaign.add_argument("--hosts", type=Path, metavar="FILE", help="the hosts file of ssh")
    campaign.add_argument("--mode", default="", help="comma-separated modes (default: each own)")
    campaign.add_argument("--jobs", type=int, default=1, help="runs at once on this machine")
    campaign.add_argument("--shard", default="1/1", help="I/N: this machine's slice of the runs")
    campaign.add_argument(
        "--seed",
        help="the campaign's seed (default: random; with --shard, the UTC date, so shards agree)",
    )
    campaign.add_argument(
        "--guide",
        default="random",
        help="random (default: each draw's seed) or coverage (fresh draws and mutations "
        "steered to new behaviour)",
    )
    campaign.add_argument(
        "--target-setting",
        action="append",
        metavar="KEY=VALUE",
        help="a setting of the targets' own, given to every run (repeatable; rabbitmq: "
        "queue-type=mirrored …)",
    )
    campaign.add_argument("--out", type=Path, help="the campaign folder (default campaigns/…)")
    campaign.add_argument(
        "--failures-dir",
        type=Path,
        default=DEFAULT_FAILURES,
        metavar="DIR",
        help="the failure database it replays first and records into",
    )
    campaign.add_argument("--no-report", action="store_true", help="skip the Spark report")
    campaign.add_argument(
        "--stop-at-first-broken",
        action="store_true",
        help="end at the first broken run (those still going are interrupted)",
    )

    shrink = sub.add_parser(
        "shrink", help="the smallest schedule that still shows a run's violation (delta debugging)"
    )
    shrink.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the failing run's folder")
    shrink.add_argument("--budget", default="10m", help="e.g. 10m (default), 1h")
    shrink.add_argument(
        "--tries", type=int, default=3, help="reruns per candidate; kept if any reproduces (3)"
    )
    shrink.add_argument("--out", type=Path, help="where the reruns go (default shrinks/…)")
    return {"campaign": _cmd_campaign, "shrink": _cmd_shrink}


def _cmd_shrink(args: argparse.Namespace) -> int:
    """Exit 0: shrunk (the smallest reproducing run printed); 4: the violation never came
    back, so there was nothing to shrink."""
    from lab.campaign.plan import parse_budget
    from lab.campaign.shrink import shrink_run

    budget = parse_budget(args.budget)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or Path("shrinks") / f"{stamp}-{args.run_dir.name}"
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: a file, not a folder: give a new --out folder")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} exists and is not empty: give a new --out folder")
    result = shrink_run(args.run_dir, budget_s=budget, tries=args.tries, out=out, say=say)
    if not result.reproduced:
        print(
            f"shrink: did not reproduce: {', '.join(result.violations)} never came back "
            f"in {result.reruns} rerun(s); nothing to shrink"
        )
        return 4
    print(
        f"shrink: operations {result.ops_before} → {result.ops_after}, load "
        f"{result.seconds_before:g} s → {result.seconds_after:g} s, {result.reruns} reruns"
        + (" (budget spent)" if result.budget_spent else "")
    )
    for window in result.kept:
        print(f"  {window}")
    print(f"smallest: {result.best_folder}")
    from lab.ground.invocation import shown_command

    print(f"reproduce: {shown_command('lab')} replay {Path(str(result.best_folder)).absolute()}")
    return 0


def _request(args: argparse.Namespace) -> CampaignRequest:
    from lab.campaign.plan import CampaignRequest, Shard, nightly_seed, parse_budget
    from lab.ground.spec_words import parse_seed, parse_target_settings

    shard = Shard.parse(args.shard)
    if args.seed is not None:
        seed = parse_seed(args.seed)
    elif shard.count > 1:
        seed = nightly_seed()
    else:
        seed = int.from_bytes(os.urandom(4), "big")
    return CampaignRequest(
        budget_s=parse_budget(args.budget),
        seed=seed,
        scenarios=_names(args.scenarios),
        targets=_names(args.targets),
        backends=_names(args.backends),
        modes=_names(args.mode),
        jobs=args.jobs,
        shard=shard,
        hosts_file=args.hosts,
        stop_at_broken=args.stop_at_first_broken,
        guide=args.guide,
        settings=tuple(sorted(parse_target_settings(args.target_setting).items())),
    )


def _cmd_campaign(args: argparse.Namespace) -> int:
    if args.merge:
        if args.merge[0] != "merge":
            raise UsageError(f"unknown campaign action {args.merge[0]!r} (did you mean merge?)")
        return _merge(args)
    from lab.campaign.campaign import run_campaign
    from lab.campaign.failures import FailureDB

    request = _request(args)
    request.cells()  # every name checked before anything starts
    if "docker" in request.backends:
        require(DOCKER, "a campaign on the docker backend")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    shard = f"-shard{request.shard.index}of{request.shard.count}" if request.shard.count > 1 else ""
    out = args.out or Path("campaigns") / f"{stamp}-{request.seed}{shard}"
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: a file, not a folder: give a new --out folder")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} exists and is not empty: give a new --out folder")
    say(f"lab: campaign into {out}, seed {request.seed}, shard {request.shard}")
    say(f"lab: budget {args.budget}, {request.jobs} run(s) at a time, guide {request.guide}")
    show = _Shower(sys.stderr)
    try:
        summary = run_campaign(request, out, FailureDB(args.failures_dir), show)
    finally:
        show.close()
    return _finish(summary, out, args.no_report)


def _finish(summary: CampaignSummary, out: Path, no_report: bool) -> int:
    for line in summary.table(out):
        print(line)
    if not no_report and any(r.folder for r in summary.records):
        _report(out)
    print(out)
    return 1 if summary.new_failures else 0


def _report(out: Path) -> None:
    """The Spark report over the campaign's runs, into out/report."""
    if not REPORTS.installed:
        print(
            f"report: not made: it needs {', '.join(REPORTS.missing())} "
            f"(run {REPORTS.install_command})"
        )
        return
    say("lab: making the report (Spark) …")
    logs = out / "logs"
    logs.mkdir(exist_ok=True)
    with (logs / "report.out").open("wb") as o, (logs / "report.err").open("wb") as e:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "lab",
                "report",
                str(out / "runs"),
                "--out",
                str(out / "report"),
            ],
            stdout=o,
            stderr=e,
            check=False,
        )
    if done.returncode == 0:
        print(f"report: {out / 'report'}")
    else:
        print(f"report: could not be made (see {logs / 'report.err'})")


def _merge(args: argparse.Namespace) -> int:
    from lab.campaign.merge import merge_campaigns

    if args.out is None:
        raise UsageError("campaign merge needs --out DIR (a new folder)")
    summary = merge_campaigns([Path(p) for p in args.merge[1:]], args.out)
    return _finish(summary, args.out, args.no_report)


class _Shower:
    """A finished run is a line; on a terminal a status line stays at the bottom."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.live = out.isatty()
        self.last = ""

    def __call__(self, summary: CampaignSummary, line: str | None) -> None:
        status = summary.status_line()
        if self.live:
            text = ("\r\033[K" + line + "\n" if line else "") + "\r\033[K" + status
            self.out.write(text)
        elif line is not None:
            self.out.write(f"{line} · {status}\n")
        self.out.flush()
        self.last = status

    def close(self) -> None:
        if self.live:
            self.out.write("\n")
            self.out.flush()
