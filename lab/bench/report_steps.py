"""The `report` benchmark's measured steps, each in a process of its own so that every
figure includes starting Spark: `python -m lab.bench.report_steps STEP RUNS_DIR [STORE]`
prints one JSON line with the step's seconds (from the process's start of work) and the CPU
seconds its process tree used (`tree_cpu_seconds`, Linux).

    folders   the reliability + performance jobs over RUNS_DIR's folders (Parquet copies)
    store     the same jobs with STORE: runs the manifest holds come from the store
    compact   incremental compaction of RUNS_DIR into STORE
    duckdb-folders, duckdb-store   DuckDB's aggregations over the same data
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["main", "run_step"]


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _spark_jobs(runs_dir: Path, store: Path | None) -> dict[str, Any]:
    from spark_reports.jobs import extract_inputs
    from spark_reports.performance import change_vs_baseline, performance_table
    from spark_reports.reliability import broken_runs, reliability_table, unreadable_runs
    from spark_reports.session import spark_session

    spark = spark_session()  # maps the class archive when there is one; never records it
    inputs = extract_inputs(spark, [runs_dir], store, _say)
    runs = inputs.runs.cache()
    reliability = reliability_table(runs).collect()
    broken = broken_runs(runs).collect()
    unreadable = unreadable_runs(runs).collect()
    performance = change_vs_baseline(performance_table(runs, inputs.histogram)).collect()
    return {
        "reliability_rows": len(reliability),
        "performance_rows": len(performance),
        "broken": len(broken),
        "unreadable": len(unreadable),
        "from_store": inputs.from_store,
        "from_folders": inputs.from_folders,
        "class_archive": _archive_mapped(),
    }


def _archive_mapped() -> bool:
    """Whether this step's driver JVM mapped the class archive (what the JVM did)."""
    from pyspark import SparkContext

    from spark_reports.class_archive import archive_path, mapped_by

    gateway, path = SparkContext._gateway, archive_path()
    process = None if gateway is None else getattr(gateway, "proc", None)
    return process is not None and path is not None and mapped_by(process.pid, path)


def _compact(runs_dir: Path, store: Path) -> dict[str, Any]:
    from spark_reports.compaction import compact

    done = compact([runs_dir], store, say=_say)
    return {"compacted": len(done.compacted), "already": len(done.already)}


def _duckdb(runs_dir: Path, store: Path | None) -> dict[str, Any]:
    from spark_reports.duckdb_baseline import duckdb_reports
    from spark_reports.run_folders import read_runs

    records = read_runs([runs_dir])
    if store is not None:
        rows = duckdb_reports(records, parquet=store)
    else:
        copies = [str(Path(r.folder) / "history.parquet") for r in records if r.problem is None]
        rows = duckdb_reports(records, copies=copies)
    return {"reliability_rows": rows[0], "performance_rows": rows[1]}


def tree_cpu_seconds() -> float:
    """CPU seconds used so far by this process and its descendants (the JVM, Python
    workers), from /proc: what a step costs whatever else the machine is doing."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = sum(int(f) for f in fields[11:15]) / tick
    total, pending, seen = 0.0, [os.getpid()], set()
    while pending:
        pid = pending.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += used.get(pid, 0.0)
        pending += [child for child, parent in parents.items() if parent == pid]
    return total


def run_step(step: str, runs_dir: Path, store: Path | None) -> dict[str, Any]:
    """Run one step; its figures, `seconds` and `cpu_seconds`."""
    started = time.perf_counter()
    if step == "folders":
        figures = _spark_jobs(runs_dir, None)
    elif step == "store" and store is not None:
        figures = _spark_jobs(runs_dir, store)
    elif step == "compact" and store is not None:
        figures = _compact(runs_dir, store)
    elif step == "duckdb-folders":
        figures = _duckdb(runs_dir, None)
    elif step == "duckdb-store" and store is not None:
        figures = _duckdb(runs_dir, store)
    else:
        raise SystemExit(f"usage: python -m lab.bench.report_steps STEP RUNS_DIR [STORE] ({step})")
    seconds = time.perf_counter() - started
    return {**figures, "seconds": seconds, "cpu_seconds": tree_cpu_seconds()}


def main(argv: list[str]) -> int:
    step, runs_dir = argv[0], Path(argv[1])
    store = Path(argv[2]) if len(argv) > 2 else None
    print(json.dumps(run_step(step, runs_dir, store)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
