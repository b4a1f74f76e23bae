"""shrink: reruns and wall time to shrink a real failure — incidents/ack-none-crash.toml,
acknowledgement policy NONE with the master isolated and killed among noise — and the
reduction (operations and load, before → after)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab.bench._base import Benchmark, Say
from lab.ground.paths import LAB_ROOT

__all__ = ["BENCHMARK"]

INCIDENT = LAB_ROOT / "incidents" / "ack-none-crash.toml"
BUDGET = "40m"
TRIES = 2


def _lab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lab", *args],
        cwd=LAB_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def run(say: Say) -> str:
    with tempfile.TemporaryDirectory(prefix="lab-bench-shrink-") as tmp:
        root = Path(tmp)
        say(f"running {INCIDENT.name} until it loses acknowledged messages …")
        folder = None
        for attempt in range(1, 4):
            first = _lab("run", "--spec", str(INCIDENT), "--runs-dir", str(root / "runs"))
            if first.returncode == 1:
                folder = first.stdout.splitlines()[0]
                break
            say(f"attempt {attempt}: no violation ({first.returncode}); again")
        if folder is None:
            raise RuntimeError(f"{INCIDENT.name} did not lose anything in 3 runs")
        say(f"shrinking {folder} (budget {BUDGET}, {TRIES} tries per candidate) …")
        began = time.monotonic()
        out = root / "shrunk"
        shrunk = _lab(
            *("shrink", folder, "--budget", BUDGET, "--tries", str(TRIES), "--out", str(out))
        )
        wall = time.monotonic() - began
        if shrunk.returncode != 0:
            raise RuntimeError(f"lab shrink ended with {shrunk.returncode}: {shrunk.stdout}")
        saved = json.loads((out / "shrink.json").read_text(encoding="utf-8"))
    for line in shrunk.stdout.splitlines():
        say(line)
    before, after = saved["operations"]
    load_before, load_after = saved["load_s"]
    return (
        f"shrink: {before} → {after} operations ({before / max(after, 1):.1f}x), load "
        f"{load_before:g} → {load_after:g} s, in {saved['reruns']} reruns and {wall / 60:.1f} "
        f"min (kept: {'; '.join(saved['kept'])})"
    )


BENCHMARK = Benchmark(
    name="shrink",
    description="reruns and wall time to shrink the NONE-ack-policy failure, and the reduction",
    run=run,
)
