"""campaign: runs completed per hour for `random` on local processes with one run at a time
and with two, and the fixed cost of a run beside the scenario's own load.

Each setting is a real `lab campaign` (a process of its own, as a user runs it) with the
same budget. A run's fixed cost is its whole length (the `lab run` process, start to
exit) less its load (the workload's `load` phase to its `heal`), split into the parts
its events.jsonl shows: the process before the run's clock starts (interpreter, imports,
checks), the cluster's start, the stop and drain after the load, and the teardown, with
the judging after it.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from lab.bench._base import Benchmark, Say
from lab.ground.paths import LAB_ROOT

__all__ = ["BENCHMARK", "fixed_cost"]

BUDGET = "4m"
TARGET_FIXED_S = 2.0
NS = 1e9


def _phases(folder: Path) -> dict[str, float]:
    """The run's clock at each workload phase's start, in seconds (the first of each)."""
    found: dict[str, float] = {}
    for line in (folder / "events.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("kind") == "workload.phase":
            found.setdefault(str(event["phase"]), int(event["time"]) / NS)
    return found


def fixed_cost(record: dict[str, Any], campaign_dir: Path) -> dict[str, float] | None:
    """A run's length less its load, and the parts of it; None without a run folder."""
    if not record.get("folder"):
        return None
    phases = _phases(campaign_dir / record["folder"])
    if not {"load", "heal", "drain", "teardown", "end"} <= phases.keys():
        return None
    load = phases["heal"] - phases["load"]
    seconds = float(record["seconds"])
    return {
        "total": seconds,
        "load": load,
        "fixed": seconds - load,
        "process": seconds - phases["end"],  # before the run's clock, and judging after it
        "start": phases["load"],
        "stop_drain": phases["teardown"] - phases["heal"],
        "teardown": phases["end"] - phases["teardown"],
    }


def _campaign(jobs: int, root: Path, say: Say) -> tuple[dict[str, Any], Path]:
    out = root / f"jobs{jobs}"
    say(f"campaign of random for {BUDGET}, {jobs} run(s) at a time …")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "lab", "campaign", "--budget", BUDGET),
            *("--scenarios", "random", "--jobs", str(jobs), "--seed", "20261123"),
            *("--no-report", "--out", str(out), "--failures-dir", str(root / "failures")),
        ],
        cwd=LAB_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"lab campaign ended with {done.returncode}: {done.stderr[-500:]}")
    campaign = json.loads((out / "campaign.json").read_text(encoding="utf-8"))
    return campaign, out


def run(say: Say) -> str:
    per_hour: dict[int, float] = {}
    costs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="lab-bench-campaign-") as tmp:
        for jobs in (1, 2):
            campaign, out = _campaign(jobs, Path(tmp), say)
            runs = campaign["runs"]
            per_hour[jobs] = len(runs) * 3600 / float(campaign["elapsed_s"])
            counts = campaign["counts"]
            say(
                f"jobs {jobs}: {len(runs)} runs in {campaign['elapsed_s']:.0f} s "
                f"({counts['held']} held, {counts['broken']} broken, {counts['unknown']} "
                f"unknown) = {per_hour[jobs]:.0f} runs/h"
            )
            if jobs == 1:  # one at a time: the parts are not stretched by a neighbour
                costs = [c for r in runs if (c := fixed_cost(r, out)) is not None]
    if not costs:
        raise RuntimeError("no run finished inside the budget: nothing to measure")

    def mean(key: str) -> float:
        return statistics.mean(c[key] for c in costs)

    say(
        f"a run (jobs 1, mean of {len(costs)}): {mean('total'):.1f} s = load {mean('load'):.1f} "
        f"s + fixed {mean('fixed'):.1f} s (process {mean('process'):.1f}, start "
        f"{mean('start'):.1f}, stop+drain {mean('stop_drain'):.1f}, teardown "
        f"{mean('teardown'):.1f})"
    )
    return (
        f"campaign: {per_hour[1]:.0f} runs/h with --jobs 1, {per_hour[2]:.0f} runs/h with "
        f"--jobs 2 ({per_hour[2] / per_hour[1]:.2f}x); fixed cost {mean('fixed'):.1f} s per "
        f"run beside a {mean('load'):.0f} s load (random, local processes, {BUDGET} each; "
        f"target fixed cost <= {TARGET_FIXED_S:.0f} s)"
    )


BENCHMARK = Benchmark(
    name="campaign",
    description="runs per hour of `random` with --jobs 1 and 2, and a run's fixed cost",
    run=run,
)
