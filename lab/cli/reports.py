"""`lab report`, `lab bench`, `lab allure`: reports over many runs, benchmarks, Allure."""

from __future__ import annotations

import argparse
import datetime as dt
import os
from pathlib import Path

from lab.cli.common import DEFAULT_STATE_DIR, Commands, say
from lab.ground.errors import UsageError
from lab.ground.extras import REPORTS, require

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> Commands:
    """Add this part's subcommands to `sub`; return their handlers by name."""
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
    bench.add_argument(
        "--mode",
        default="replicated-group",
        help="replicated-group (default) or active-passive (measured on local processes)",
    )
    size = bench.add_mutually_exclusive_group()
    size.add_argument(
        "--runs", type=_positive, help="how many runs, for a benchmark made of runs (interrupt)"
    )
    size.add_argument(
        "--minutes", type=_positive, help="how many minutes, for a benchmark of a length (soak)"
    )
    bench.add_argument(
        "--record",
        type=Path,
        metavar="PAGE",
        help="also write the figure, its date and the machine into a generated page "
        "(docs/observed/benchmarks.md)",
    )
    from lab.bench.detection_request import add_detection_options

    add_detection_options(
        bench.add_argument_group("detection and rediscover (lab bench detection, rediscover)")
    )
    bench.add_argument(
        "--setting",
        action="append",
        metavar="KEY=VALUE",
        help="lab bench rediscover: a setting of the target's own for its campaigns "
        "(repeatable; rabbitmq: queue-type=mirrored)",
    )
    bench.add_argument(
        "--control-setting",
        action="append",
        metavar="KEY=VALUE",
        help="lab bench rediscover: run the control too, with this setting changed "
        "(repeatable; rabbitmq: queue-type=quorum)",
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
    allure.add_argument(
        "--history-from",
        type=Path,
        metavar="PREVIOUS_REPORT_DIR",
        help="copy that report's history/ into the results first, so the Trend carries on",
    )
    allure.add_argument(
        "--keep-history",
        type=Path,
        metavar="DIR",
        help="carry the Trend on through DIR (e.g. a CI cache): its history/, when there is "
        "one, goes into the results first, and the new report's history/ is saved into it",
    )
    allure.add_argument("--executor-name", help="who ran the tests (executor.json; e.g. a CI)")
    allure.add_argument("--executor-url", help="the executor's page")
    allure.add_argument("--build-order", type=int, help="this build's number (orders the Trend)")
    allure.add_argument("--report-url", help="where this report will be published")
    return {"report": _cmd_report, "bench": _cmd_bench, "allure": _cmd_allure}


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number ≥ 1, not {text!r}")
    return number


def _cmd_report(args: argparse.Namespace) -> int:
    require(REPORTS, "lab report")
    from spark_reports.cli import run_report

    return run_report(args, say)


def _cmd_bench(args: argparse.Namespace) -> int:
    from lab.bench.registry import BENCHMARKS, benchmark_named

    if args.name is None:
        if args.record is not None:
            raise UsageError("--record keeps a benchmark's figure: name the benchmark")
        for name, bench in sorted(BENCHMARKS.items()):
            print(f"{name:<12}  {bench.description}")
        return 0
    from lab.ground.spec import BACKENDS, TARGETS

    bench = benchmark_named(args.name)
    from lab.ground.extras import EXTRAS

    for extra in EXTRAS:
        if extra.name in bench.needs or (extra.name == "docker" and args.backend == "docker"):
            require(extra, f"lab bench {bench.name}")
    if bench.name == "detection":
        return _detection(args)
    if bench.name == "rediscover":
        return _rediscover(args)
    if args.setting or args.control_setting:
        raise UsageError("--setting is an option of `lab bench rediscover` only")
    from lab.bench.detection_request import OPTIONS

    given = [name for name in OPTIONS if getattr(args, name) not in (None, False)]
    if given:
        flag = "--" + ("list" if given[0] == "list_zoo" else given[0].replace("_", "-"))
        raise UsageError(f"{flag} is an option of `lab bench detection` only")
    sized = [(name, value) for name in ("runs", "minutes") if (value := getattr(args, name))]
    if sized and bench.size_option != sized[0][0]:
        takes = f"--{bench.size_option}" if bench.size_option else "no length option"
        raise UsageError(f"benchmark {bench.name!r} takes {takes}, not --{sized[0][0]}")
    if args.backend not in BACKENDS:
        raise UsageError(f"unknown backend {args.backend!r} (known: {', '.join(BACKENDS)})")
    if args.target not in TARGETS:
        raise UsageError(f"unknown target {args.target!r} (known: {', '.join(TARGETS)})")
    from lab.ground.cluster_settings import MODES, REPLICATED_GROUP

    if args.mode not in MODES:
        raise UsageError(f"unknown mode {args.mode!r} (known: {', '.join(MODES)})")
    if args.record is not None:
        from lab.bench.record import check_page

        check_page(args.record)
    started, load = dt.datetime.now(dt.UTC), os.getloadavg()[0]
    if args.mode != REPLICATED_GROUP:
        if bench.run_mode is None:
            raise UsageError(f"benchmark {bench.name!r} measures the replicated group only")
        if args.backend != "process":
            raise UsageError("--mode measures on local processes")
        if args.target == "broker_ref":
            figure = bench.run_mode(say, args.mode)
        elif bench.run_mode_against is None:
            raise UsageError(f"benchmark {bench.name!r} measures broker_ref only in {args.mode}")
        else:
            figure = bench.run_mode_against(say, args.mode, args.target)
    elif args.target != "broker_ref":
        if bench.run_against is None:
            raise UsageError(f"benchmark {bench.name!r} measures broker_ref only")
        if args.backend != "process":
            raise UsageError("a benchmark against another target runs on local processes")
        figure = bench.run_against(say, args.target)
    elif sized and bench.run_sized is not None:
        if args.backend != "process" and bench.run_on is None:
            raise UsageError(f"benchmark {bench.name!r} runs on the process backend only")
        figure = bench.run_sized(say, args.backend, sized[0][1])
    elif args.backend == "process":
        figure = bench.run(say)
    elif bench.run_on is None:
        raise UsageError(f"benchmark {bench.name!r} runs on the process backend only")
    else:
        figure = bench.run_on(say, args.backend)
    print(figure)
    if args.record is not None:
        from lab.bench.record import record
        from lab.ground.machine import this_machine

        record(args.record, _bench_command(args), figure, started, load, this_machine())
    return 0


def _rediscover(args: argparse.Namespace) -> int:
    """`lab bench rediscover`: campaigns against a real broker's settings (flags checked first)."""
    from lab.bench.rediscover import rediscover_request, run_rediscover

    if args.backend != "process" or args.runs or args.minutes or args.mode != "replicated-group":
        raise UsageError("lab bench rediscover runs `random` on local processes: no length")
    for flag in ("bugs", "named", "list_zoo", "jobs"):
        if getattr(args, flag):
            raise UsageError(f"--{flag.replace('_', '-')} is an option of lab bench detection")
    request = rediscover_request(args)
    started, load = dt.datetime.now(dt.UTC), os.getloadavg()[0]
    figure = run_rediscover(request, say)
    print(figure)
    if args.record is not None:
        from lab.bench.record import record
        from lab.ground.machine import this_machine

        record(args.record, _bench_command(args), figure, started, load, this_machine())
    return 0


def _detection(args: argparse.Namespace) -> int:
    """`lab bench detection`: the zoo listed, or the benchmark (every flag checked first)."""
    from lab.bench.detection import list_zoo, run_detection
    from lab.bench.detection_request import detection_request
    from lab.bench.zoo import load_zoo

    if args.backend != "process" or args.target != "broker_ref" or args.runs or args.minutes:
        raise UsageError("lab bench detection runs broker_ref on local processes, no length")
    if args.mode != "replicated-group":
        raise UsageError("lab bench detection runs each bug in its own HA design: no --mode")
    bugs = load_zoo()
    if args.list_zoo:
        if args.record is not None:
            raise UsageError("--record keeps a benchmark's figure; --list prints the zoo")
        for line in list_zoo(bugs):
            print(line)
        return 0
    request = detection_request(args)
    if args.record is not None:
        from lab.bench.record import check_page

        check_page(args.record)
    started, load = dt.datetime.now(dt.UTC), os.getloadavg()[0]
    figure = run_detection(say, request)
    print(figure)
    if args.record is not None:
        from lab.bench.detection_page import command_of
        from lab.bench.record import record
        from lab.ground.machine import this_machine

        last = figure.splitlines()[-1]
        record(args.record, command_of(request), last, started, load, this_machine())
    return 0


def _bench_command(args: argparse.Namespace) -> str:
    """The `lab bench` command a figure came from, without --record and default options."""
    words = ["lab", "bench", args.name]
    for option, default in (("backend", "process"), ("target", "broker_ref")):
        if getattr(args, option) != default:
            words += [f"--{option}", getattr(args, option)]
    if args.mode != "replicated-group":
        words += ["--mode", args.mode]
    for option in ("runs", "minutes"):
        if getattr(args, option):
            words += [f"--{option}", str(getattr(args, option))]
    return " ".join(words)


def _cmd_allure(args: argparse.Namespace) -> int:
    """Executor fields not given as flags come from GitHub Actions' GITHUB_* variables when
    the command runs there."""
    import os

    require(REPORTS, "lab allure (its timeline charts)")
    from lab.reporting.allure_ci import executor_of, keep_history, kept_history
    from lab.reporting.allure_cli import generate_report

    history_from = args.history_from
    if args.keep_history is not None:
        if history_from is not None:
            raise UsageError(
                "--history-from and --keep-history both say where the Trend comes from: give one"
            )
        history_from = kept_history(args.keep_history)

    executor = executor_of(
        name=args.executor_name,
        url=args.executor_url,
        build_order=args.build_order,
        report_url=args.report_url,
        env=os.environ,
    )
    index = generate_report(
        args.results_dir,
        args.out,
        tools_dir=args.tools_dir,
        say=say,
        history_from=history_from,
        executor=executor,
    )
    if args.keep_history is not None:
        say(f"lab: the Trend's history kept in {keep_history(index.parent, args.keep_history)}")
    print(index.parent)
    return 0
