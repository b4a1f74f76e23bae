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
    from lab.run.cluster import RunParts

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> Commands:
    """Add this part's subcommands to `sub`; return their handlers by name."""
    run = sub.add_parser("run", help="run a scenario into a new run folder")
    run.add_argument("scenario")
    run.add_argument("--seed", help="the run's seed (default: a random one, printed)")
    run.add_argument("--backend", default="process", help="process (default) or docker")
    run.add_argument("--target", default="broker_ref", help="broker_ref (default) or qpid-broker-j")
    run.add_argument(
        "--mode",
        help="replicated-group or active-passive (default: the scenario's own; `lab list`)",
    )
    run.add_argument("--runs-dir", type=Path, default=DEFAULT_RUNS_DIR)
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
    replay.add_argument("run_dir", type=Path)
    replay.add_argument("--runs-dir", type=Path, help="default: the runs folder it came from")

    sub.add_parser("list", help="list the scenarios")

    check = sub.add_parser("check", help="check a history (or a run folder) for lost messages")
    check.add_argument("path", type=Path)
    check.add_argument("--json", action="store_true", help="print the result as one JSON object")

    return {"run": _cmd_run, "replay": _cmd_replay, "list": _cmd_list, "check": _cmd_check}


def _cmd_run(args: argparse.Namespace) -> int:
    from lab.compose import parts_for
    from lab.ground.spec import Durability, parse_seed

    parts = parts_for(args.scenario, args.backend, args.target, args.mode)
    scenario = parts.scenario
    seed = parse_seed(args.seed) if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    durability = None
    if args.durability is not None or args.coalescing is not None:
        base = scenario.durability
        coalescing = base.coalescing_sync if args.coalescing is None else args.coalescing
        durability = Durability.parse(args.durability or base.triplet, coalescing)
    spec = scenario.spec(seed, backend=args.backend, target=parts.target, durability=durability)
    return _execute(spec, parts, args.runs_dir)


def _cmd_replay(args: argparse.Namespace) -> int:
    from lab.compose import parts_for
    from lab.ground.spec import RunSpec
    from lab.run.folder import RunFolder

    source = RunFolder.open_existing(args.run_dir)
    spec = RunSpec.from_json(source.read_spec(), source.spec)
    parts = parts_for(spec.scenario, spec.backend, spec.target, spec.group.mode)
    runs_dir = args.runs_dir or source.path.parent.parent
    return _execute(spec, parts, runs_dir)


def _execute(spec: RunSpec, parts: RunParts, runs_dir: Path) -> int:
    from lab.run.progress import progress_for
    from lab.run.runner import run_scenario

    print(f"lab: running {spec.scenario} with seed {spec.seed}", file=sys.stderr)
    outcome = run_scenario(spec, parts, runs_dir, progress=progress_for(sys.stderr))
    print(outcome.folder.path)
    print(outcome.summary)
    if not outcome.verdict.held:
        print(f"reproduce: {outcome.reproduce}")
        return 1
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from scenarios.catalog import SCENARIOS

    width = max(len(name) for name in SCENARIOS)
    for name, scenario in sorted(SCENARIOS.items()):
        modes = " + ".join(scenario.modes)
        print(f"{name:<{width}}  {modes:<33}  {scenario.summary}")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from lab.judge.checker import check_path

    result = check_path(args.path)
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
