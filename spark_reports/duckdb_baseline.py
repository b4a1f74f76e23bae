"""The reliability and performance aggregations again, in DuckDB: the benchmark's yardstick.

Same inputs (the run records, the histories as JSONL or the compacted Parquet), same
figures: verdict counts, message counts, unavailability and failover percentiles per group;
throughput and send→ack / send→receive percentiles per config and client count.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb
import pyarrow as pa

from spark_reports.run_folders import RunRecord

__all__ = ["duckdb_reports"]

_HISTORY_COLUMNS = (
    "{'index': 'BIGINT', 'time': 'BIGINT', 'process': 'VARCHAR', 'type': 'VARCHAR', "
    "'f': 'VARCHAR', 'value': 'VARCHAR'}"
)

_KEYS = "scenario, target, backend, nodes, master_sync, replica_sync, ack_policy, coalescing_sync"

_RELIABILITY = f"""
WITH faults AS (
  SELECT {_KEYS}, unnest(failover_s) AS failover FROM runs WHERE problem IS NULL
), failover AS (
  SELECT {_KEYS}, quantile_cont(failover, [0.5, 0.95, 0.99]) AS failover
    FROM faults WHERE failover IS NOT NULL GROUP BY ALL
), figures AS (
  SELECT {_KEYS},
         count(*) FILTER (WHERE problem IS NULL) AS runs,
         count(*) FILTER (WHERE problem IS NULL AND verdict = 'held') AS held,
         count(*) FILTER (WHERE problem IS NULL AND verdict = 'broken') AS broken,
         count(*) FILTER (WHERE problem IS NULL AND verdict = 'unknown') AS unknown,
         count(*) FILTER (WHERE problem IS NOT NULL) AS unreadable,
         sum(lost) AS lost, sum(duplicated) AS duplicated, sum(resurrected) AS resurrected,
         sum(unavailable_total_s) AS unavailable_s, max(unavailable_longest_s) AS longest_s,
         100 * (1 - sum(unavailable_total_s) / sum(workload_s)) AS availability_pct,
         count(*) FILTER (WHERE two_masters_seen) AS two_masters_runs
    FROM runs GROUP BY ALL
)
SELECT * FROM figures LEFT JOIN failover USING ({_KEYS})
"""

_PERFORMANCE = """
WITH per_value AS (
  SELECT run_id, value,
         min(time) FILTER (WHERE f = 'send' AND type = 'ok') AS ok_ns,
         min(time) FILTER (WHERE f = 'send' AND type = 'invoke') AS first_ns,
         max(time) FILTER (WHERE f = 'send' AND type = 'invoke') AS last_ns,
         min(time) FILTER (WHERE f = 'receive' AND type = 'ok') AS receive_ns
    FROM history WHERE f IN ('send', 'receive') GROUP BY run_id, value
), latency AS (
  SELECT run_id,
         CASE WHEN last_ns <= ok_ns THEN (ok_ns - last_ns) / 1e6 END AS ack_ms,
         (receive_ns - first_ns) / 1e6 AS receive_ms
    FROM per_value
)
SELECT r.scenario, r.target, r.backend, r.nodes, r.master_sync, r.replica_sync, r.ack_policy,
       r.coalescing_sync, r.producers, r.consumers,
       quantile_disc(l.ack_ms, [0.5, 0.95, 0.99]) AS ack,
       quantile_disc(l.receive_ms, [0.5, 0.95, 0.99]) AS receive
  FROM latency l JOIN runs r USING (run_id)
 WHERE r.problem IS NULL GROUP BY ALL
"""

_THROUGHPUT = """
SELECT scenario, target, backend, nodes, master_sync, replica_sync, ack_policy, coalescing_sync,
       producers, consumers, count(*) AS runs, avg(acknowledged_per_s) AS msgs_s
  FROM runs WHERE problem IS NULL GROUP BY ALL
"""


def _runs_table(records: Sequence[RunRecord]) -> pa.Table:
    from spark_reports.schemas import RUNS

    names = RUNS.fieldNames()
    return pa.Table.from_pylist([dict(zip(names, r.as_row(), strict=True)) for r in records])


def duckdb_reports(
    records: Sequence[RunRecord],
    *,
    jsonl: Sequence[str] = (),
    copies: Sequence[str] = (),
    parquet: Path | None = None,
) -> tuple[int, int]:
    """Run both aggregations over the folders' JSONL, their history.parquet copies (paths)
    or a store's history; (reliability, performance) rows."""
    connection = duckdb.connect()
    try:
        connection.execute("SET enable_progress_bar = false")
        runs = _runs_table(records)
        connection.register("runs", runs)
        if copies:
            files = ", ".join(f"'{path}'" for path in copies)
            connection.execute(
                "CREATE VIEW history AS SELECT "
                "string_split(filename, '/')[-3] || '/' || string_split(filename, '/')[-2] "
                f"AS run_id, time, process, type, f, value FROM read_parquet([{files}], "
                "filename = true)"
            )
        elif parquet is not None:
            source = f"read_parquet('{parquet / 'history'}/**/*.parquet', hive_partitioning = true)"
            connection.execute(
                f"CREATE VIEW history AS SELECT run_id, time, process, type, f, value FROM {source}"
            )
        else:
            files = ", ".join(f"'{Path(f) / 'history.jsonl'}'" for f in jsonl)
            connection.execute(
                "CREATE VIEW history AS SELECT "
                "string_split(filename, '/')[-3] || '/' || string_split(filename, '/')[-2] "
                "AS run_id, time, process, type, f, value FROM read_json("
                f"[{files}], format = 'newline_delimited', columns = {_HISTORY_COLUMNS}, "
                "filename = true, ignore_errors = true)"
            )
        reliability = connection.execute(_RELIABILITY).fetchall()
        connection.execute(_THROUGHPUT).fetchall()
        performance = connection.execute(_PERFORMANCE).fetchall()
        return len(reliability), len(performance)
    finally:
        connection.close()
