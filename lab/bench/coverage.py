"""coverage: distinct behaviours reached by a guided campaign and by a blind one in the same
time, side by side on one machine — `lab campaign --guide coverage` and `--guide random`,
the same campaign seed, `random` on broker_ref's replicated group on local processes, one
run at a time each, both started together so they share the machine alike.

Both campaigns measure the same thing the same way (lab.campaign.behaviour, in each
campaign's coverage.jsonl): the benchmark reads their folders, prints coverage at every
fifth of the time and what each found, and ends on
`coverage: guided N behaviours, random M (R x)`. The two campaign folders stay in
`campaigns/bench-coverage-<stamp>/` (`coverage/` and `random/`, each with its failure
database), for `lab report` and `lab replay`.
"""

from __future__ import annotations

import datetime as dt
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from lab.bench._base import Benchmark, Say
from lab.campaign.coverage import CoveragePoint, read_points
from lab.ground.paths import LAB_ROOT

__all__ = ["BENCHMARK", "coverage_at", "run_minutes"]

MINUTES = 30
SEED = 20261126
GUIDES = ("coverage", "random")
LABELS = {"coverage": "guided", "random": "random"}


def _started(stamp: str) -> dt.datetime:
    return dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")


def coverage_at(campaign: dict[str, Any], points: list[CoveragePoint], at_s: float) -> int:
    """Distinct behaviours of the runs that had ended `at_s` seconds into the campaign."""
    began = dt.datetime.strptime(str(campaign["started"]), "%Y-%m-%dT%H:%M:%SZ")
    ended = {
        int(r["number"]): (_started(r["started"]) - began).total_seconds() + float(r["seconds"])
        for r in campaign["runs"]
        if r.get("started")
    }
    shown = [p.behaviours for p in points if ended.get(p.run, float("inf")) <= at_s]
    return max(shown, default=0)


def _start(guide: str, minutes: int, root: Path) -> subprocess.Popen[bytes]:
    out = root / guide
    with (root / f"{guide}.log").open("wb") as log:
        return subprocess.Popen(
            [
                *(sys.executable, "-m", "lab", "campaign", "--guide", guide),
                *("--budget", f"{minutes}m", "--scenarios", "random", "--seed", str(SEED)),
                *("--no-report", "--out", str(out), "--failures-dir", str(root / f"db-{guide}")),
            ],
            cwd=LAB_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def _finish(procs: dict[str, subprocess.Popen[bytes]]) -> dict[str, int]:
    """Each campaign's exit status once both end; on Ctrl-C each heals and stops its runs."""
    try:
        return {guide: proc.wait() for guide, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in procs.values():
            proc.wait()


def run_minutes(say: Say, minutes: int) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    root = LAB_ROOT / "campaigns" / f"bench-coverage-{stamp}"  # kept: what each found
    root.mkdir(parents=True)
    say(f"two campaigns of random side by side, {minutes} min each, into {root} …")
    codes = _finish({guide: _start(guide, minutes, root) for guide in GUIDES})
    found: dict[str, tuple[dict[str, Any], list[CoveragePoint]]] = {}
    for guide in GUIDES:
        if codes[guide] not in (0, 1):
            log = (root / f"{guide}.log").read_text(errors="replace")[-800:]
            raise RuntimeError(f"lab campaign --guide {guide} ended with {codes[guide]}: {log}")
        campaign = json.loads((root / guide / "campaign.json").read_text(encoding="utf-8"))
        found[guide] = campaign, read_points(root / guide / "coverage.jsonl")
    for fifth in range(1, 6):
        at = minutes * 60 * fifth / 5
        shown = ", ".join(f"{LABELS[g]} {coverage_at(*found[g], at)}" for g in GUIDES)
        say(f"after {at / 60:g} min: {shown} behaviours")
    for guide in GUIDES:
        campaign = found[guide][0]
        c = campaign["counts"]
        arms = campaign.get("guide", {}).get("arms", {})
        paid = ", ".join(f"{a} {s['paid']}/{s['runs']}" for a, s in arms.items() if s["runs"])
        say(
            f"{LABELS[guide]}: {c['runs']} runs ({c['held']} held, {c['broken']} broken, "
            f"{c['unknown']} unknown), {len(campaign['new_failures'])} new failures"
            + (f"; paid/runs by arm: {paid}" if paid else "")
        )
    guided = found["coverage"][1][-1].behaviours if found["coverage"][1] else 0
    blind = found["random"][1][-1].behaviours if found["random"][1] else 0
    ratio = f"{guided / blind:.2f}x" if blind else "no random behaviours"
    return f"coverage: guided {guided} behaviours, random {blind} ({ratio})"


BENCHMARK = Benchmark(
    name="coverage",
    description="distinct behaviours of `lab campaign --guide coverage` and `--guide random` "
    f"side by side ({MINUTES} min each; --minutes N)",
    run=lambda say: run_minutes(say, MINUTES),
    run_sized=lambda say, backend, minutes: run_minutes(say, minutes),
    size_option="minutes",
)
