"""What `lab bench detection` is asked to do, checked before anything starts.

    lab bench detection [--bugs NAME,…] [--budget 10m] [--trials 3] [--generators random,…]
                        [--jobs N] [--named] [--control] [--seed S] [--shrink-budget 3m]
                        [--store DIR] [--page FILE] [--list]
    lab bench detection --from-store --page FILE [--store DIR] [--budget B]

Every trial goes into the store as it ends (lab.bench.detection_store; default
.lab/bench/detection); a page is made from the store's trials of the current generator
version and of one budget, and `--from-store` makes it without running anything (the
budget of the latest stored trial unless --budget says which). A page needs SciPy and
matplotlib (the `reports` extra), checked before anything starts.

A generator is what draws a campaign's runs: `random` (today's draws) or `coverage` (a
guided campaign, `lab campaign --guide coverage`). A generator this lab's `lab campaign`
cannot run is refused with its reason (exit 2).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from lab.bench.detection_store import DEFAULT_STORE
from lab.campaign.plan import parse_budget
from lab.ground.errors import UsageError
from lab.ground.extras import STATISTICS, require
from lab.ground.paths import LAB_ROOT

__all__ = [
    "GENERATORS",
    "OPTIONS",
    "DetectionRequest",
    "add_detection_options",
    "detection_request",
    "guides_offered",
]

GENERATORS = ("random", "coverage")
DEFAULT_SEED = 20261126
# The flags only `lab bench detection` takes (their argparse destinations).
OPTIONS = (
    "bugs",
    "budget",
    "trials",
    "generators",
    "jobs",
    "named",
    "control",
    "seed",
    "shrink_budget",
    "page",
    "store",
    "from_store",
    "list_zoo",
)
# What --from-store cannot take: they ask for campaigns to run.
_RUN_ONLY = ("bugs", "trials", "generators", "jobs", "named", "control", "seed", "shrink_budget")


@dataclass(frozen=True)
class DetectionRequest:
    """`bugs` empty: the whole zoo. Trial k (from 1) of every cell runs its campaign with
    seed `seed + k - 1`, for every bug and generator alike. `jobs` campaigns (or named runs,
    or shrinks) at once; `shrink_budget_s` 0: no shrinking; `control`: the same campaigns
    on the tree without a bug (one per design and generator, trial 1). Every result goes
    into `store`; `from_store`: nothing runs, the page is made from the store (of
    `budget_s` when `budget_set`, else of the latest stored trial's budget)."""

    bugs: tuple[str, ...] = ()
    budget_s: float = 600.0
    trials: int = 3
    generators: tuple[str, ...] = ("random",)
    jobs: int = 1
    named: bool = False
    control: bool = False
    seed: int = DEFAULT_SEED
    shrink_budget_s: float = 180.0
    page: Path | None = None
    store: Path = DEFAULT_STORE
    from_store: bool = False
    budget_set: bool = False

    def seeds(self) -> tuple[int, ...]:
        return tuple(self.seed + k for k in range(self.trials))


def add_detection_options(group: argparse._ArgumentGroup) -> None:
    """The flags of `lab bench detection`, added to the bench command's parser."""
    group.add_argument("--bugs", help="comma-separated bug names (default: the whole zoo)")
    group.add_argument("--budget", help="each campaign's budget, e.g. 10m (default 10m)")
    group.add_argument(
        "--trials", type=int, help="campaigns per bug and generator (3; 0 with --named: none)"
    )
    group.add_argument("--generators", help="comma-separated: random, coverage (random)")
    group.add_argument("--jobs", type=int, help="campaigns (or runs) at once (1)")
    group.add_argument(
        "--named", action="store_true", help="also the named scenarios (J1-J13, C1-C8) per bug"
    )
    group.add_argument(
        "--control", action="store_true", help="also the campaigns on the tree without a bug"
    )
    group.add_argument("--seed", type=int, help=f"trial 1's campaign seed ({DEFAULT_SEED})")
    group.add_argument("--shrink-budget", help="`lab shrink` budget per found bug (3m; 0: none)")
    group.add_argument(
        "--page",
        type=Path,
        help="also write a page (Markdown, with its figures beside) from the store's trials",
    )
    group.add_argument(
        "--store", type=Path, help=f"where every trial is kept (default {DEFAULT_STORE})"
    )
    group.add_argument(
        "--from-store",
        action="store_true",
        help="run nothing: make the --page from the trials in the store",
    )
    group.add_argument(
        "--list", dest="list_zoo", action="store_true", help="print the zoo, one bug a line"
    )


def guides_offered() -> str:
    """The help of this lab's `lab campaign` (where a generator's flag would be listed)."""
    done = subprocess.run(
        [sys.executable, "-m", "lab", "campaign", "--help"],
        cwd=LAB_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(p.strip() for p in (text or "").split(",") if p.strip())


def _check_generators(generators: tuple[str, ...], campaign_help: str) -> None:
    if not generators:
        raise UsageError("--generators: name at least one (random, coverage)")
    for name in generators:
        if name not in GENERATORS:
            raise UsageError(f"unknown generator {name!r} (known: {', '.join(GENERATORS)})")
        if name != "random" and not ("--guide" in campaign_help and name in campaign_help):
            raise UsageError(
                f"generator {name!r} needs `lab campaign --guide {name}`, which this lab does "
                "not have yet (the guided campaign is not part of it): use --generators random"
            )
    if len(set(generators)) != len(generators):
        raise UsageError("--generators: a generator is named twice")


def detection_request(
    args: argparse.Namespace, campaign_help: str | None = None
) -> DetectionRequest:
    """The request from `lab bench detection`'s flags; UsageError for a bad one."""
    if args.page is not None:
        require(STATISTICS, "lab bench detection --page")
    if args.from_store:
        return _from_store(args)
    generators = _names(args.generators) or ("random",)
    if any(name != "random" for name in generators) and campaign_help is None:
        campaign_help = guides_offered()
    _check_generators(generators, campaign_help or "")
    trials = 3 if args.trials is None else args.trials
    jobs = 1 if args.jobs is None else args.jobs
    if trials < 0 or (trials == 0 and not args.named):
        raise UsageError(f"--trials {trials}: at least one (0 only with --named: its matrix alone)")
    if jobs < 1:
        raise UsageError(f"--jobs {jobs}: at least one at a time")
    shrink = str(args.shrink_budget or "3m").strip()
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed {args.seed}: a seed is 0 or more")
    return DetectionRequest(
        bugs=_names(args.bugs),
        budget_s=parse_budget(args.budget or "10m"),
        trials=trials,
        generators=generators,
        jobs=jobs,
        named=bool(args.named),
        control=bool(args.control),
        seed=DEFAULT_SEED if args.seed is None else args.seed,
        shrink_budget_s=0.0 if shrink == "0" else parse_budget(shrink),
        page=args.page,
        store=args.store or DEFAULT_STORE,
        budget_set=args.budget is not None,
    )


def _from_store(args: argparse.Namespace) -> DetectionRequest:
    if args.page is None:
        raise UsageError("--from-store makes a page: give --page FILE")
    for name in _RUN_ONLY:
        if getattr(args, name) not in (None, False):
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"--from-store runs nothing: {flag} asks for campaigns")
    return DetectionRequest(
        budget_s=parse_budget(args.budget or "10m"),
        trials=0,
        page=args.page,
        store=args.store or DEFAULT_STORE,
        from_store=True,
        budget_set=args.budget is not None,
    )
