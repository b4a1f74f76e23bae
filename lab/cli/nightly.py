"""`lab nightly plan` and `lab nightly merge`: the steps of a sharded nightly campaign around
its shards, as the reusable workflow runs them (docs/campaigns.md, "Nightly CI").

    lab nightly plan --shards 4 --backends process,docker …   the night's seed and shards,
                                                              every name checked
    lab nightly merge DOWNLOADS --out night                   the shards' artifacts joined

Both print `key=value` lines a workflow reads (`--github-output $GITHUB_OUTPUT` appends
them there too); `merge` also writes its summary as Markdown (`--summary
$GITHUB_STEP_SUMMARY`). `merge` exits 0 when nothing new broke, 1 when a shard found a new
failure, broke off (its folder left out) or none left a whole campaign folder, 2 when it
could not merge.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from lab.cli.common import Commands, say
from lab.cli.failures import DEFAULT_FAILURES
from lab.ground.errors import UsageError

__all__ = ["register"]


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--github-output",
        type=Path,
        metavar="FILE",
        help="also append the key=value lines to FILE (a workflow's $GITHUB_OUTPUT)",
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> Commands:
    nightly = sub.add_parser(
        "nightly", help="the steps of a sharded nightly campaign around its shards (CI)"
    )
    steps = nightly.add_subparsers(dest="step", required=True, metavar="STEP")
    plan = steps.add_parser(
        "plan",
        help="the night decided before any shard starts: its seed (the UTC date unless "
        "given), shards and backends, every scenario, target and mode checked",
    )
    plan.add_argument("--shards", type=int, default=4, help="shards per backend (1-16; 4)")
    plan.add_argument("--seed", help="the night's seed (default: the UTC date, yyyymmdd)")
    plan.add_argument("--budget", default="30m", help="each shard's budget, checked (30m)")
    plan.add_argument("--scenarios", default="random", help="comma-separated (default random)")
    plan.add_argument("--targets", default="broker_ref", help="comma-separated")
    plan.add_argument("--backends", default="process", help="comma-separated (default process)")
    plan.add_argument("--mode", default="", help="comma-separated modes (default: each own)")
    _output_option(plan)
    merge = steps.add_parser(
        "merge",
        help="the shards' downloaded artifacts joined: every `campaign-*` folder into one "
        "campaign folder, every `failures-*` database into the failure database",
    )
    merge.add_argument(
        "downloads",
        type=Path,
        metavar="DOWNLOADS",
        help="the folder the shards' artifacts were downloaded into, side by side",
    )
    merge.add_argument("--out", type=Path, required=True, help="the night's campaign folder (new)")
    merge.add_argument(
        "--failures-dir",
        type=Path,
        default=DEFAULT_FAILURES,
        metavar="DIR",
        help="the failure database the shards' are joined into (default .lab/failures)",
    )
    merge.add_argument(
        "--summary",
        type=Path,
        metavar="FILE",
        help="append the night's summary as Markdown to FILE ($GITHUB_STEP_SUMMARY)",
    )
    _output_option(merge)
    return {"nightly": _cmd_nightly}


def _cmd_nightly(args: argparse.Namespace) -> int:
    return _plan(args) if args.step == "plan" else _merge(args)


def _appendable(path: Path | None, option: str) -> None:
    """A file the command will append to, checked before anything is done."""
    if path is None:
        return
    try:
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise UsageError(f"{option} {path}: {exc.strerror or exc}") from None


def _write_outputs(pairs: Sequence[tuple[str, str]], github_output: Path | None) -> None:
    lines = "".join(f"{key}={value}\n" for key, value in pairs)
    sys.stdout.write(lines)
    if github_output is not None:
        with github_output.open("a", encoding="utf-8") as out:
            out.write(lines)


def _plan(args: argparse.Namespace) -> int:
    from lab.backends.toxiproxy import SERVER_VERSION
    from lab.campaign.night import plan_night
    from lab.campaign.plan import CampaignRequest, nightly_seed, parse_budget
    from lab.ground.spec import parse_seed
    from lab.reporting.allure_cli import ALLURE_COMMANDLINE_VERSION

    request = CampaignRequest(
        budget_s=parse_budget(args.budget),
        seed=nightly_seed() if args.seed is None else parse_seed(args.seed),
        scenarios=_names(args.scenarios),
        targets=_names(args.targets),
        backends=_names(args.backends),
        modes=_names(args.mode),
    )
    plan = plan_night(request, args.shards, ALLURE_COMMANDLINE_VERSION, SERVER_VERSION)
    _appendable(args.github_output, "--github-output")
    legs = plan.shards * len(plan.backends)
    say(
        f"lab: the night: seed {plan.seed}, {plan.shards} shard(s) × "
        f"{', '.join(plan.backends)} = {legs} campaign(s) of {args.budget}"
    )
    for cell in plan.cells:
        say(f"lab:   {cell}")
    for reason in plan.skipped:
        say(f"lab:   skipped {reason}")
    _write_outputs(plan.outputs(), args.github_output)
    return 0


def _merge(args: argparse.Namespace) -> int:
    from lab.campaign.failures import FailureDB
    from lab.campaign.night import merge_night

    _appendable(args.summary, "--summary")
    _appendable(args.github_output, "--github-output")
    night = merge_night(args.downloads, args.out, FailureDB(args.failures_dir))
    lines: list[str] = []
    if night.summary is None:
        lines.append(f"no shard left a whole campaign folder in {args.downloads}")
    else:
        lines += night.summary.table(args.out)
        shards = ", ".join(p.name for p in night.merged)
        lines.append(f"merged {len(night.merged)} shard(s) into {args.out}: {shards}")
    for folder in night.incomplete:
        lines.append(f"left out {folder.name}: no campaign.json (the shard broke off)")
    joined = sum(c.change != "unchanged" for c in night.failures)
    lines.append(
        f"failure database {args.failures_dir}: {len(night.failures)} record(s) from the "
        f"shards, {joined} new or with new replays"
    )
    for line in lines:
        print(line)
    if args.summary is not None:
        seed = "" if night.summary is None else night.summary.request.get("seed", "")
        text = f"### The night's campaign (seed {seed})\n\n```\n" + "\n".join(lines) + "\n```\n"
        with args.summary.open("a", encoding="utf-8") as out:
            out.write(text)
    _write_outputs(night.outputs(), args.github_output)
    if night.summary is None or night.summary.new_failures or night.incomplete:
        return 1
    return 0
