"""The `lab` command: run, replay, list, check, up, down, bench, allure.

Exit status: 0 success (a run's prediction held, a history valid), 1 a prediction
broken or a history invalid, 3 a history whose validity is unknown, 2 bad usage or
input that cannot be read — always with a one-line message on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from lab import __version__
from lab.ground.errors import LabError, UsageError

if TYPE_CHECKING:
    from lab.ground.spec import RunSpec
    from lab.run.cluster import RunParts

__all__ = ["main"]

DEFAULT_RUNS_DIR = Path("runs")
DEFAULT_STATE_DIR = Path(".lab")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"lab: error: {message} (see `lab {self._sub_name()}--help`)\n")

    def _sub_name(self) -> str:
        parts = self.prog.split()[1:]
        return " ".join(parts) + " " if parts else ""


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lab", description="A chaos lab for highly available message brokers.")
    parser.add_argument("--version", action="version", version=f"lab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run a scenario into a new run folder")
    run.add_argument("scenario")
    run.add_argument("--seed", help="the run's seed (default: a random one, printed)")
    run.add_argument("--backend", default="process", help="process (default) or docker")
    run.add_argument("--target", default="broker_ref", help="broker_ref (default) or qpid-broker-j")
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

    up = sub.add_parser("up", help="start a cluster behind Toxiproxy and leave it running")
    up.add_argument("--nodes", type=int, default=1)
    up.add_argument("--backend", default="process")
    up.add_argument("--target", default="broker_ref", help="broker_ref or qpid-broker-j")
    up.add_argument(
        "--toxiproxy-port", type=int, help="the Toxiproxy API port (default: a free one)"
    )
    up.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR)

    down = sub.add_parser("down", help="stop the cluster `lab up` started")
    down.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR)

    report = sub.add_parser(
        "report", help="reliability, performance and trend reports from many run folders (Spark)"
    )
    from spark_reports.cli import add_arguments as add_report_arguments

    add_report_arguments(report)

    bench = sub.add_parser("bench", help="run a benchmark (no name: list them)")
    bench.add_argument("name", nargs="?")
    bench.add_argument("--backend", default="process", help="process (default) or docker")
    bench.add_argument(
        "--target",
        default="broker_ref",
        help="broker_ref (default); another target is measured beside broker_ref in one run",
    )

    images = sub.add_parser("images", help="build the lab's container images (Docker backend)")
    images.add_argument("action", choices=["build"], help="build (cached by content)")
    images.add_argument(
        "--target",
        action="append",
        help="also build this target's image (repeatable; default: broker_ref)",
    )

    allure = sub.add_parser("allure", help="an Allure HTML report from pytest's --alluredir")
    allure.add_argument("results_dir", type=Path)
    allure.add_argument("--out", type=Path, required=True, help="the report folder to write")
    allure.add_argument(
        "--tools-dir",
        type=Path,
        default=DEFAULT_STATE_DIR / "tools",
        help="where the Allure command line is installed on first use (default: .lab/tools)",
    )
    return parser


def _cmd_run(args: argparse.Namespace) -> int:
    from lab.compose import parts_for
    from lab.ground.spec import Durability, parse_seed

    parts = parts_for(args.scenario, args.backend, args.target)
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
    parts = parts_for(spec.scenario, spec.backend, spec.target)
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
        print(f"{name:<{width}}  {scenario.summary}")
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


def _cmd_up(args: argparse.Namespace) -> int:
    from lab.cli.updown import cluster_up

    if args.nodes < 1:
        raise UsageError("--nodes must be at least 1")
    described = cluster_up(
        args.state_dir,
        nodes=args.nodes,
        backend=args.backend,
        target=args.target,
        toxiproxy_port=args.toxiproxy_port,
    )
    print(json.dumps(described))
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    from lab.cli.updown import cluster_down

    stopped = cluster_down(args.state_dir)
    print(
        f"lab: stopped {', '.join(stopped)}" if stopped else "lab: no cluster is up",
        file=sys.stderr,
    )
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from spark_reports.cli import run_report

    return run_report(args, lambda text: print(text, file=sys.stderr, flush=True))


def _cmd_bench(args: argparse.Namespace) -> int:
    from lab.bench.registry import BENCHMARKS, benchmark_named

    if args.name is None:
        for name, bench in sorted(BENCHMARKS.items()):
            print(f"{name:<12}  {bench.description}")
        return 0
    from lab.ground.spec import BACKENDS, TARGETS

    bench = benchmark_named(args.name)
    say = _say
    if args.backend not in BACKENDS:
        raise UsageError(f"unknown backend {args.backend!r} (known: {', '.join(BACKENDS)})")
    if args.target not in TARGETS:
        raise UsageError(f"unknown target {args.target!r} (known: {', '.join(TARGETS)})")
    if args.target != "broker_ref":
        if bench.run_against is None:
            raise UsageError(f"benchmark {bench.name!r} measures broker_ref only")
        if args.backend != "process":
            raise UsageError("a benchmark against another target runs on local processes")
        figure = bench.run_against(say, args.target)
    elif args.backend == "process":
        figure = bench.run(say)
    elif bench.run_on is None:
        raise UsageError(f"benchmark {bench.name!r} runs on the process backend only")
    else:
        figure = bench.run_on(say, args.backend)
    print(figure)
    return 0


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _cmd_images(args: argparse.Namespace) -> int:
    from lab.backends.docker.engine import ensure_engine
    from lab.backends.docker.images import build_images
    from lab.ground.spec import TARGETS

    targets = args.target or ["broker_ref"]
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise UsageError(f"unknown target {unknown[0]!r} (known: {', '.join(TARGETS)})")
    ensure_engine(_say)
    for name, ref in sorted(build_images(_say, targets).items()):
        print(f"{name}  {ref}")
    return 0


def _cmd_allure(args: argparse.Namespace) -> int:
    from lab.reporting.allure_cli import generate_report

    index = generate_report(
        args.results_dir,
        args.out,
        tools_dir=args.tools_dir,
        say=lambda text: print(text, file=sys.stderr, flush=True),
    )
    print(index.parent)
    return 0


_COMMANDS = {
    "report": _cmd_report,
    "images": _cmd_images,
    "run": _cmd_run,
    "replay": _cmd_replay,
    "list": _cmd_list,
    "check": _cmd_check,
    "up": _cmd_up,
    "down": _cmd_down,
    "bench": _cmd_bench,
    "allure": _cmd_allure,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except LabError as exc:
        print(f"lab: error: {exc}", file=sys.stderr)
        for note in getattr(exc, "__notes__", ()):
            print(f"lab: {note}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lab: interrupted; every fault was healed and every process stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
