"""`lab run`, `lab replay`, `lab list`, `lab check`: runs and their histories."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from lab.cli.common import DEFAULT_RUNS_DIR, Commands

if TYPE_CHECKING:
    from lab.ground.spec import RunSpec
    from lab.judge.result import ReplayOf
    from lab.run.cluster import RunParts

__all__ = ["register", "replay_spec"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> Commands:
    """Add this part's subcommands to `sub`; return their handlers by name."""
    run = sub.add_parser("run", help="run a scenario (or an incident file) into a new run folder")
    run.add_argument("scenario", nargs="?", help="a scenario of `lab list` (or none, with --spec)")
    run.add_argument(
        "--spec",
        type=Path,
        metavar="FILE",
        help="run a hand-written incident (TOML or JSON; docs/campaigns.md shows the format)",
    )
    run.add_argument("--seed", help="the run's seed (default: a random one, printed)")
    run.add_argument("--backend", help="process (default), docker or ssh")
    run.add_argument(
        "--hosts", type=Path, metavar="FILE", help="the hosts file of --backend ssh (docs/hosts.md)"
    )
    run.add_argument(
        "--target",
        metavar="NAME[@VERSION]",
        help="broker_ref (default), qpid-broker-j, artemis, or a target of `lab list`; "
        "qpid-broker-j@9.1.0 runs that version",
    )
    run.add_argument(
        "--target-setting",
        action="append",
        metavar="KEY=VALUE",
        help="a setting of the target's own (repeatable; artemis: activation=quorum-voting …)",
    )
    run.add_argument(
        "--mode",
        help="replicated-group or active-passive (default: the scenario's own; `lab list`)",
    )
    run.add_argument(
        "--runs-dir",
        type=Path,
        default=DEFAULT_RUNS_DIR,
        metavar="DIR",
        help="where the run folder goes (default runs/)",
    )
    run.add_argument(
        "--durability",
        metavar="MASTER_SYNC,REPLICA_SYNC,ACK_POLICY",
        help="the durability triplet, e.g. NO_SYNC,NO_SYNC,NONE (default: the scenario's)",
    )
    run.add_argument(
        "--coalescing",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="coalescing-sync on or off (default: the scenario's)",
    )

    replay = sub.add_parser("replay", help="run a recorded spec and schedule again")
    replay.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run folder")
    replay.add_argument(
        "--times",
        type=int,
        default=1,
        help="run it N times and say how often the original outcome came back (default 1)",
    )
    replay.add_argument("--runs-dir", type=Path, help="default: the runs folder it came from")
    replay.add_argument("--hosts", type=Path, metavar="FILE", help="a run on hosts: its hosts file")

    sub.add_parser(
        "list",
        help="list the scenarios and targets, and where each comes from (one whose entry "
        "point cannot be loaded is listed with why, then the command exits 2)",
    )

    check = sub.add_parser("check", help="check a history (or a run folder) for lost messages")
    check.add_argument("path", type=Path, metavar="PATH", help="a history.jsonl or a run folder")
    check.add_argument("--json", action="store_true", help="print the result as one JSON object")

    return {"run": _cmd_run, "replay": _cmd_replay, "list": _cmd_list, "check": _cmd_check}


def _cmd_run(args: argparse.Namespace) -> int:
    from lab.compose import parts_for
    from lab.ground.errors import UsageError
    from lab.ground.spec import Durability
    from lab.ground.spec_words import parse_seed, parse_target_settings

    if args.spec is not None:
        return _run_incident(args)
    if args.scenario is None:
        raise UsageError("name a scenario (`lab list`) or give an incident file with --spec FILE")
    backend, target = args.backend or "process", args.target or "broker_ref"
    parts = parts_for(args.scenario, backend, target, args.mode, args.hosts)
    scenario = parts.scenario
    if scenario.needs_spec:
        raise UsageError(f"scenario {scenario.name!r} runs an incident file: lab run --spec FILE")
    seed = parse_seed(args.seed) if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    durability = None
    if args.durability is not None or args.coalescing is not None:
        base = scenario.durability
        coalescing = base.coalescing_sync if args.coalescing is None else args.coalescing
        durability = Durability.parse(args.durability or base.triplet, coalescing)
    spec = scenario.spec(seed, backend=backend, target=parts.target, durability=durability)
    spec = spec.with_target_settings(parse_target_settings(args.target_setting))
    return _execute(spec, parts, args.runs_dir)


def _run_incident(args: argparse.Namespace) -> int:
    from lab.compose import parts_for
    from lab.ground.errors import UsageError
    from lab.run.incident import load_incident

    given = [
        f"--{name}"
        for name in (
            "seed",
            "backend",
            "target",
            "target_setting",
            "mode",
            "durability",
            "coalescing",
        )
        if getattr(args, name) is not None
    ]
    if args.scenario is not None or given:
        extra = args.scenario or given[0]
        raise UsageError(
            f"{extra}: an incident file gives its own settings (only --runs-dir and --hosts)"
        )
    spec = load_incident(args.spec)
    parts = parts_for(spec.scenario, spec.backend, spec.target_ref, spec.group.mode, args.hosts)
    return _execute(spec, parts, args.runs_dir)


def _cmd_replay(args: argparse.Namespace) -> int:
    from lab.compose import parts_for
    from lab.ground.errors import InputError, UsageError
    from lab.judge.result import ReplayOf
    from lab.run.folder import RunFolder
    from lab.run.incident import load_edited_spec

    if args.times < 1:
        raise UsageError(f"--times {args.times}: replay at least once")
    source = RunFolder.open_existing(args.run_dir)
    # A spec.json edited by hand is checked field by field, as an incident file is.
    spec = load_edited_spec(source.read_spec(), source.spec)
    try:
        parts = parts_for(spec.scenario, spec.backend, spec.target_ref, spec.group.mode, args.hosts)
    except UsageError as exc:
        raise InputError(f"{source.spec}: {exc}") from None
    runs_dir = args.runs_dir or source.path.parent.parent
    return replay_spec(spec, parts, runs_dir, ReplayOf.read(source.path), args.times)


def replay_spec(
    spec: RunSpec,
    parts: RunParts,
    runs_dir: Path,
    original: ReplayOf,
    times: int,
    said_as: str = "replay",
) -> int:
    """Run `spec` `times` times and compare each outcome with `original`'s, printing a line
    per run and a last line `SAID_AS: …`. Exit 0: a held run held every time; 1: a violation
    came back (or a held run broke); 4: the original violation never came back (did not
    reproduce)."""
    from lab.run.progress import progress_for
    from lab.run.runner import run_scenario

    kinds = ", ".join(original.violations) or "none"
    print(
        f"lab: running {original.folder} ({original.verdict}: {kinds}) again, {times} time(s)",
        file=sys.stderr,
    )
    again = 0
    for number in range(1, times + 1):
        outcome = run_scenario(
            spec, parts, runs_dir, progress=progress_for(sys.stderr), replay_of=original
        )
        verdict = outcome.verdict
        came_back = original.reproduced(verdict.outcome, verdict.violations)
        again += came_back
        print(outcome.folder.path)
        said = "reproduced" if came_back else "did not reproduce"
        print(f"{number}/{times}: {outcome.summary} — {said}")
    if original.verdict == "held":
        print(f"{said_as}: held {again}/{times}")
        return 0 if again == times else 1
    if again == 0:
        print(f"{said_as}: did not reproduce (0/{times}): the original's {kinds} never came back")
        return 4
    print(f"{said_as}: reproduced {again}/{times} ({kinds})")
    return 1


DEVIATION_EXIT = 5  # the prediction did not hold, as the target's declared deviation says


def _execute(spec: RunSpec, parts: RunParts, runs_dir: Path) -> int:
    """Exit 0: the prediction held; 1: it did not; 5: it did not, as a deviation the target
    declares (lab.judge.deviations): reproduced. A held run whose target declares a deviation
    for it says so on stderr (declared deviation not seen: fixed upstream?) unless its `seen`
    rates say earlier sessions held too, and exits 0."""
    from lab.run.disk import check_space
    from lab.run.progress import progress_for
    from lab.run.runner import run_scenario

    check_space(runs_dir, spec)  # a runs folder clearly too small: one line, nothing started
    print(f"lab: running {spec.scenario} with seed {spec.seed}", file=sys.stderr)
    outcome = run_scenario(spec, parts, runs_dir, progress=progress_for(sys.stderr))
    deviation = outcome.judgement.deviation(
        spec.scenario, spec.backend, spec.group.mode, spec.group.target_context.get(spec.target)
    )
    print(outcome.folder.path)
    if deviation is None:
        print(outcome.summary)
    else:
        print(f"{outcome.summary} — {deviation.line()}")
    if outcome.verdict.held:
        if deviation is not None and deviation.loud:
            print(f"lab: WARNING: {deviation.line()}", file=sys.stderr)
        return 0
    print(f"reproduce: {outcome.reproduce}")
    return DEVIATION_EXIT if deviation is not None and deviation.reproduced else 1


def _cmd_list(args: argparse.Namespace) -> int:
    """The scenarios, then the targets: the lab's own and installed packages' (each line
    says where it comes from). An entry point that cannot be loaded is listed with why, the
    others still are, and then it is the one-line error of exit status 2."""
    from lab.ground.errors import PluginError
    from lab.ground.plugins import BUILT_IN
    from lab.targets.catalog import make_target, target_names, target_source
    from lab.targets.protocol import Versioned
    from scenarios.catalog import REGISTRY

    broken: list[PluginError] = []
    names = sorted(REGISTRY.names())
    width = max(len(name) for name in names)
    for name in names:
        source = REGISTRY.source(name)
        shown = "" if source == BUILT_IN else f"  [{source}]"
        try:
            scenario = REGISTRY.get(name)
        except PluginError as exc:
            broken.append(exc)
            print(f"{name:<{width}}  {'?':<33}  cannot be loaded: {exc}{shown}")
            continue
        modes = " + ".join(scenario.modes)
        print(f"{name:<{width}}  {modes:<33}  {scenario.summary}{shown}")
    print("\ntargets (`--target NAME`, or NAME@VERSION for one with versions):")
    width = max(len(name) for name in target_names())
    for name in target_names():
        try:
            target = make_target(name)
        except PluginError as exc:
            broken.append(exc)
            print(f"  {name:<{width}}  cannot be loaded: {exc}")
            continue
        versions = (
            f"; versions: default {target.default_version}, others fetched on first use"
            if isinstance(target, Versioned)
            else ""
        )
        print(f"  {name:<{width}}  {target_source(name)}{versions}")
    if len(broken) == 1:
        raise broken[0]
    if broken:
        raise PluginError(f"{len(broken)} entry points cannot be loaded (each line above says why)")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from lab.judge.checker import check_path

    # A run folder's empty history is a run stopped before its load; a bare empty file is
    # no history at all.
    result = check_path(args.path, empty_ok=args.path.is_dir())
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        r = result
        print(
            f"valid={json.dumps(r.valid)} attempted={r.attempted} acknowledged={r.acknowledged} "
            f"failed={r.failed} indeterminate={r.indeterminate} received={r.received} "
            f"lost={r.lost.count} unexpected={r.unexpected.count} "
            f"resurrected={r.resurrected.count} recovered={r.recovered.count} "
            f"duplicated={r.duplicated.count} duplicate_deliveries={r.duplicate_deliveries}"
        )
        for name in ("lost", "unexpected", "resurrected"):
            ids = getattr(r, name).ids
            if ids:
                shown = ", ".join(ids[:10]) + (" …" if len(ids) > 10 else "")
                print(f"{name}: {shown}")
    if result.valid is True:
        return 0
    return 3 if result.valid == "unknown" else 1
