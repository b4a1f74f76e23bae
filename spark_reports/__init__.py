"""Many run folders into knowledge: PySpark jobs for reliability, performance and trend reports.

    run folders (Parquet copies) ─┐                      ┌─ reliability table, broken runs
                                  ├─ extract ─ transform ┼─ performance table, pivots, charts
    compacted store ──────────────┘                      └─ trend table, regressions
                                                               │
                                                          load: report.html + CSV + Parquet

`spark_reports.cli` is the entry point (`lab report`); `compaction.compact` takes the run
folders its manifest has not seen into a partitioned Parquet store that the jobs read
instead of the folders; `lab.bench.synth_runs` writes plausible run folders for tests and
the benchmark.
"""

__all__: list[str] = []
