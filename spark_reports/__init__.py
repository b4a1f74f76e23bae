"""Many run folders into knowledge: PySpark jobs for reliability, performance and trend reports.

    run folders (JSONL) ─┐                      ┌─ reliability table, broken runs
                         ├─ extract ─ transform ┼─ performance table, pivots, charts
    compacted Parquet ───┘                      └─ trend table, regressions
                                                      │
                                                 load: report.html + CSV + Parquet

`spark_reports.cli` is the entry point (`lab report`); `compaction.compact` turns finished
runs into a partitioned Parquet store that the jobs prefer; `synth_runs` writes plausible
run stores for tests and the benchmark.
"""

__all__: list[str] = []
